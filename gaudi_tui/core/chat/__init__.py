"""Chat: the engine child process, its protocol, model loading, generation, and the conversation store."""
