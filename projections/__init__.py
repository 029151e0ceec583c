"""Read models rebuilt from the log; they consume events and never write them."""
