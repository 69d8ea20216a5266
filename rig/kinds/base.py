"""The device-kind base class (docs/design.md, "How to add a device kind"): one subclass of
:class:`DeviceKind` a kind, in a package of its own, as each of python-can's interfaces is one
subclass of ``can.BusABC``.

The shared stages call a kind only at the named points of this class: the campaign calls
:meth:`~DeviceKind.collect` and :meth:`~DeviceKind.plan_ahead`, the analysis
:meth:`~DeviceKind.analyze` and :meth:`~DeviceKind.count`, the record
:meth:`~DeviceKind.simulated_name`, the explorer :meth:`~DeviceKind.draw_scenario`,
:meth:`~DeviceKind.explore_campaign`, :meth:`~DeviceKind.check_truth` and
:meth:`~DeviceKind.misbehaviour`.  A kind's own code (its simulator, client, collection loop,
analysis, explorer draws and misbehaviours) lives in its package and nowhere else.

This module is the rig's base: it imports no stage, so every stage may use it.  The values
the stages hand a kind (a campaign's options, a decoded capture, a profile, ...) are typed
``Any`` here and named in each method's doc: their types live in the stages above, and a
type-only import of them would tie the base to every stage again.
"""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar

from feltlab.rig.errors import RigError

RESERVED_UNITS = frozenset(
    {
        "profile",
        "bus",
        "alpha",
        "seed",
        "out",
        "resume",
        "clock",
        "device-on-host",
        "json",
        "live",
        "live-linger",
        "help",
        "model",
        "faults",
        "standard",
    }
)
"""Names a kind's ``unit`` may not take: the common options of ``feltlab certify`` (a kind's
sample size is the option ``--<unit>``)."""

SETTINGS = (
    "name",
    "label",
    "simulator",
    "client",
    "base",
    "profile",
    "unit",
    "command",
    "device_keys",
    "keyed",
    "models",
    "fault_campaigns",
    "independent_samples",
    "explore_weight",
)
"""The class attributes of a kind that its constructor may override (a test's copy of a
kind with its own profile or simulator: ``type(kind)(profile=path)``)."""


class DeviceKind(ABC):
    """One kind of device the rig certifies: a subclass sets the class attributes and
    implements :meth:`collect`, :meth:`analyze` and :meth:`count`; the other methods have
    defaults that do nothing.

    Class attributes:

    - ``name``: the profile's ``[device] kind`` (``batch``); ``label``: what it is called in
      records, reports and errors (``batch shuffler``).
    - ``simulator``: the simulated device class (a :class:`~feltlab.rig.devices.SimDevice`
      subclass); ``device_keys``: the profile keys it takes beyond the common ones;
      ``client``: the host-side client class (a :class:`~feltlab.rig.clients.DeviceClient`
      subclass; its ``kind`` is the ``Kind`` the device's Heartbeat announces,
      docs/protocol.md).
    - ``base``: the default base CAN id (a multiple of 0x10 in 0x010..0x7F0,
      docs/protocol.md); ``profile``: the bundled default profile (a name in
      ``rig/certify/profiles/`` or a path to a TOML file); ``unit``: what a sample is called
      (``shoes``; the profile's ``[campaign]`` size key and ``--<unit>``); ``command``: the
      ``feltlab certify`` command that certifies it.
    - ``keyed``: its profile carries the device's key (SecOC-authenticated results);
      ``models``: its simulator takes a shuffle model (``--model``); ``fault_campaigns``: it
      runs fault campaigns (``[faults]``, ``--faults``); ``independent_samples``: its samples
      do not depend on the device's state across a collection part, so a part a crash left
      unclosed is kept (its complete samples) and the campaign goes on in a new part; False
      (a continuous shuffler: a return gap spans the part) sets such a part aside and
      collects it again from its start, unless it completes the sample
      (docs/station.md, "Crash windows"); ``explore_weight``: how often the explorer draws
      it (0: never).

    Keyword arguments of the constructor override these attributes (:data:`SETTINGS`).
    Raises :class:`RigError` when a name, command or unit is not a word, the unit is a
    certify option's name, or the simulator or client is not a class.
    """

    name: ClassVar[str]
    label: ClassVar[str]
    simulator: ClassVar[type[Any]]
    client: ClassVar[type[Any]]
    base: ClassVar[int]
    profile: ClassVar[str | Path]
    unit: ClassVar[str]
    command: ClassVar[str]
    device_keys: ClassVar[frozenset[str]] = frozenset()
    keyed: ClassVar[bool] = False
    models: ClassVar[bool] = False
    fault_campaigns: ClassVar[bool] = False
    independent_samples: ClassVar[bool] = True
    explore_weight: ClassVar[float] = 0.0

    def __init__(self, **settings: Any) -> None:
        for key, value in settings.items():
            if key not in SETTINGS:
                raise RigError(
                    f"a device kind has no setting {key!r}; choose one of {', '.join(SETTINGS)}"
                )
            setattr(self, key, value)
        for key in SETTINGS:
            if not hasattr(self, key):
                raise RigError(f"device kind {type(self).__name__}: no {key} set")
        for what, word in (("name", self.name), ("command", self.command), ("unit", self.unit)):
            if not isinstance(word, str) or not word.replace("_", "").replace("-", "").isalnum():
                raise RigError(f"a device kind's {what} must be a word, got {word!r}")
        if self.unit in RESERVED_UNITS:
            raise RigError(
                f"device kind {self.name!r}: unit {self.unit!r} is a certify option's name "
                f"(--{self.unit}); choose another unit (e.g. shoes, draws, rolls)"
            )
        for what in ("simulator", "client"):
            if not isinstance(getattr(self, what), type):
                raise RigError(
                    f"device kind {self.name!r}: {what} must be a class, got "
                    f"{getattr(self, what)!r}"
                )

    def with_settings(self, **settings: Any) -> DeviceKind:
        """A new instance of this kind's class with this instance's settings and
        ``settings`` (:data:`SETTINGS`) changed: a test's kind with its own simulator or
        profile, registered with ``register_kind(..., replace_existing=True)``."""
        own = {key: vars(self)[key] for key in SETTINGS if key in vars(self)}
        return type(self)(**{**own, **settings})

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"

    @abstractmethod
    def collect(
        self,
        opts: Any,
        client: Any,
        want: int,
        result: Any,
        progress: Any,
        stop: Any,
        *,
        faults: Any,
        directory: Path,
        part: int,
    ) -> None:
        """Collect ``want`` samples from ``client`` (an instance of :attr:`client`) into
        ``result`` (:class:`feltlab.rig.certify.collect.Collected`), with the campaign's
        ``opts`` (:class:`feltlab.rig.certify.collect.CampaignOptions`), reporting to
        ``progress`` (:class:`feltlab.rig.certify.profile.Progress`), stopping cleanly when
        ``stop`` (a :class:`threading.Event`) is set.  ``faults``: the
        :class:`feltlab.rig.certify.faults.FaultRunner` of a fault campaign (kinds with
        ``fault_campaigns``), else None; ``directory`` and ``part``: the campaign folder and
        the collection part (1-based)."""

    @abstractmethod
    def analyze(
        self,
        data: Any,
        prof: Any,
        *,
        alpha: float,
        seed: int,
        directory: Path | None,
        progress: Any,
        host: Any,
    ) -> Any:
        """Every check of a campaign, an :class:`feltlab.rig.certify.analyze.Analysis`, from
        its decoded capture ``data`` (:class:`feltlab.rig.certify.decode.CaptureData`) and
        profile ``prof`` (:class:`feltlab.rig.certify.profile.Profile`), at family-wise level
        ``alpha``, with the campaign ``seed`` (power and null simulations), the campaign
        ``directory`` (None offline from a lone file) and the host's timing uncertainty
        ``host`` (:class:`feltlab.rig.certify.uncertainty.HostUncertainty` or None)."""

    @abstractmethod
    def count(self, data: Any) -> int:
        """The samples in a decoded capture ``data``
        (:class:`feltlab.rig.certify.decode.CaptureData`)."""

    def plan_ahead(self, prof: Any, size: int, alpha: float, seed: int) -> Sequence[Any]:
        """The pure computations the analysis of a campaign of ``size`` samples will run that
        the capture does not change (:class:`feltlab.rig.certify.ahead.Job`), computed by a
        helper process during collection.  Default: nothing to do ahead."""
        return ()

    def simulated_name(self, prof: Any, model: str) -> str:
        """The simulated device's name in a record, given its profile and shuffle model.
        Default: the profile's name."""
        return str(prof.name)

    def draw_scenario(
        self, r: random.Random, base: dict[str, Any], shoes_max: int, small: int
    ) -> Any:
        """The explorer's scenario of this kind (:class:`feltlab.rig.explore.scenarios.
        Scenario`), drawn from ``r`` with the common fields ``base``; ``shoes_max`` caps a
        campaign's samples, ``small`` is a quick campaign's size.  Called only for a kind
        with ``explore_weight`` > 0."""
        raise NotImplementedError(f"device kind {self.name!r} is not explored")

    def explore_campaign(self, scenario: Any) -> dict[str, Any]:
        """The ``[campaign]`` settings the explorer adds to a scenario's profile (default
        none)."""
        return {}

    def check_truth(  # noqa: B027 - an optional point: most kinds check nothing more
        self,
        record: dict[str, Any],
        truth: Any,
        directory: Path,
        violate: Callable[[str, str], None],
    ) -> None:
        """The explorer's invariant of this kind against the device's ground truth
        (:class:`feltlab.rig.devices.misbehaviour.GroundTruth`): calls ``violate(name, why)``
        for each broken one.  Default: none."""

    def misbehaviour(self, misbehaviour: Any, truth: Any) -> Any:
        """The misbehaviour plan (a :class:`feltlab.rig.devices.misbehaviour.MisbehaviourPlan`
        subclass's instance) a simulated device of this kind consults to apply the explorer's
        ``misbehaviour`` (:class:`feltlab.rig.devices.misbehaviour.Misbehaviour` or None),
        recording into ``truth`` (:class:`feltlab.rig.devices.misbehaviour.GroundTruth`).
        Default None: the plan of the misbehaviours every kind has."""
        return None
