"""`PrivateResult`: what every private algorithm in dpsample returns."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from dpsample._src import precision
from dpsample.privacy.guarantee import PrivacyGuarantee
from dpsample.privacy.report import PrivacyReport

__all__ = ["NON_PRIVATE_KEY", "PrivateResult"]

#: The one ``info`` key under which a private algorithm may put values computed from
#: the private data that its guarantee does not cover (diagnostics for checking a run,
#: never to be released). ``dpsample run`` moves every such entry, at any depth of
#: ``info``, into the report's labelled non-private section.
NON_PRIVATE_KEY = "non_private_diagnostics"


class PrivateResult(NamedTuple):
    """A released value with the guarantee that covers it.

    Attributes:
        value: the released value (a point, an index, a pytree of arrays).
        privacy: the :class:`PrivacyGuarantee` of the whole computation that produced
            ``value`` (one released value, one guarantee).
        info: public facts about the run (parameters, noise scales, counts, which
            theorem set them). Never values computed from the private data unless they
            are themselves covered by ``privacy`` or filed under
            :data:`NON_PRIVATE_KEY` (labelled non-private).

    Examples:
        >>> from dpsample.privacy import PrivacyGuarantee, PrivateResult
        >>> r = PrivateResult(3, PrivacyGuarantee.pure(1.0), {"net_size": 10})
        >>> r.privacy.epsilon(0.0)
        1.0
    """

    value: Any
    privacy: PrivacyGuarantee
    info: Mapping[str, Any]

    def report(self, delta: float | None = None) -> PrivacyReport:
        """The privacy report of the run: ``self.privacy.report(delta)``.

        ``str`` of it is the table ``print(result.privacy)`` shows and the
        ``dpsample`` command prints; in a notebook it renders as HTML.

        Args:
            delta: The delta (default: the budget delta of the run's plan).

        Returns:
            The :class:`~dpsample.privacy.report.PrivacyReport`.

        Examples:
            >>> from dpsample.privacy import PrivacyGuarantee, PrivateResult
            >>> r = PrivateResult(3, PrivacyGuarantee.pure(1.0), {})
            >>> round(r.report(1e-6)["epsilon"], 4)
            1.0
        """
        return self.privacy.report(delta)


precision.scope_public(globals())
