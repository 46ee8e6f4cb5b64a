"""A short digest of a script's output tensors, printed on a result line so that two runs of one
program (a traced build and a trace-free one, say) can be compared bit for bit.

    print(f"output digest {tensor_digest(y, rstd)}")

The digest is SHA-256 over each tensor's bytes in order (moved to the host, made contiguous and
one-dimensional, so a 0-dimensional loss digests too), its
first 16 hex digits; tensors of another dtype or shape with the same bytes digest alike, so print
the shapes beside it where that matters.
"""
import hashlib


def tensor_digest(*tensors):
    import torch

    h = hashlib.sha256()
    for t in tensors:
        h.update(t.detach().contiguous().reshape(-1).view(torch.uint8).cpu().numpy().tobytes())
    return h.hexdigest()[:16]
