"""The command line: each `tcview` subcommand parses its arguments and calls the layers below
(`open` and `run` start the UI). The top layer: nothing imports it but the entry point.
"""
