"""The declared model: what a log source and a model offer, the objects they hold, and their
notations (compile ids, rank sets, the text of derived facts).

The bottom layer: imports nothing of tcview but `tcview.text`. No Textual, no torch.
"""
