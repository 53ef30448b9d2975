"""The voice agent inside the cell: config, provider interfaces, mock providers,
opt-out detection and the conversation planner of the simulated mode."""
