"""The run's settings: the schema, the configuration and its rules, the user's code and dataset,
the devices."""
