"""dpsample: differentially private learning with non-convex losses in JAX.

Importing dpsample turns on ``jax_enable_x64``: privacy guarantees here depend on
float64 numerics (log-space exponential mechanisms, noise calibration), and mixing
float32 into a private computation is a silent correctness hazard. See
``docs/sharp_edges.md``.
"""

import jax

jax.config.update("jax_enable_x64", True)

__version__ = "0.1.0"
