"""The ``gangway`` command. Each subcommand lives in its own module and calls the same
pure functions the services call, so offline answers match what the cluster will do."""
