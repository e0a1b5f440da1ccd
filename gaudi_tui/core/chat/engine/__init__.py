"""The chat engine child process (`python -m gaudi_tui.core.chat.engine`): it owns the model and the card. Nothing here runs in the panel."""
