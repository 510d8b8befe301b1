"""Text for a terminal: untrusted text made safe, and colour for the command line.

A leaf: imports nothing of tcview.
"""
