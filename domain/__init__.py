"""The domain: values and rules, free of I/O and databases."""
