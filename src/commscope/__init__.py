"""commscope: how fast does this cluster really communicate?"""

__version__ = "0.1.0"
