"""Type aliases shared across dpsample (BlackJAX convention).

``ArrayLike`` / ``ArrayLikeTree`` for inputs, ``Array`` / ``ArrayTree`` for outputs.
"""

from typing import Any

import jax

PRNGKey = jax.Array
Array = jax.Array
ArrayLike = jax.typing.ArrayLike
ArrayTree = Any
ArrayLikeTree = Any

__all__ = ["PRNGKey", "Array", "ArrayLike", "ArrayTree", "ArrayLikeTree"]
