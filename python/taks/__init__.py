"""taks from Python: the label audit on numpy arrays, and TAkS's sample selection
(Song et al., "No Regret Sample Selection with Noisy Labels") inside your own training
loop. The work is done by the same Rust core as the ``taks`` command line.

- :func:`audit` finds the mislabelled samples of a feature matrix (or of a folder of
  images, a CSV table or a ``.npy`` matrix) and returns an :class:`AuditResult`;
  :func:`find_label_issues` is the same audit shaped as cleanlab's function.
- :class:`Selector` keeps TAkS's Follow-the-Perturbed-Leader state: each epoch, hand it
  every sample's logits (or noise-risks) and train on the k samples it returns.
  ``taks.torch.KSetSampler`` feeds them to a PyTorch ``DataLoader``.
"""

from ._audit import AuditResult, audit, find_label_issues
from ._selector import Selector, Step
from ._taks import __version__

__all__ = ["AuditResult", "Selector", "Step", "audit", "find_label_issues", "__version__"]
