from gaudi_tui.cli import main

raise SystemExit(main())
