"""Short-lived helper processes the GUI starts: the user-code check, checkpoint inspection, device
listing."""
