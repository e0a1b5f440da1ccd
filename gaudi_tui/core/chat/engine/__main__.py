"""`python -m gaudi_tui.core.chat.engine`: start the engine (see server.py)."""

from gaudi_tui.core.chat.engine.server import main

main()
