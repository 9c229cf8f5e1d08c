"""The families of ``tgrad.nn.functional``, one private module each (the sections of PyTorch's
``torch.nn.functional`` documentation); ``nn/functional.py`` re-exports their public names."""
