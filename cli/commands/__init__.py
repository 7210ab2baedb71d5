"""One module per noun of the `det` command line."""
