"""Synthetic but realistic Haystack entities for the embedded Haystack server.

Generated here, deterministically from a seed: no third-party data ships with
protobench. A building portfolio of ``sites`` sites, each with air handlers
(AHUs), VAV boxes fed by those AHUs, and electric meters; every equipment
carries the points a real one has (sensors, set points, commands), tagged the
Haystack 3/4 way (``point``, ``his``, ``sensor``/``sp``/``cmd``, ``kind``,
``unit``, ``siteRef``/``equipRef``/``ahuRef``), with history samples.

The defaults give 3 sites, 12 AHUs, 330 VAVs, 18 meters and 2,946 points
(3,309 entities), about the size of the seed benchmark's data set.

Entity ids are readable and stable: ``s1`` (site), ``s1.ahu2`` (equip),
``s1.vav17.zat`` (point), so profiles can name points without a lookup.
"""

from __future__ import annotations

import datetime
import random
from dataclasses import dataclass, field
from typing import Any

from hs_py.kinds import MARKER, Coord, Number, Ref

_CITIES = (
    ("Denver", "CO", 39.74, -104.99, "Denver"),
    ("Chicago", "IL", 41.88, -87.63, "Chicago"),
    ("Atlanta", "GA", 33.75, -84.39, "New_York"),
    ("Seattle", "WA", 47.61, -122.33, "Los_Angeles"),
    ("Boston", "MA", 42.36, -71.06, "New_York"),
)

# (id suffix, dis, unit, markers, nominal value, spread). A unit of None is a
# Bool point; "" is a dimensionless Number. sp and cmd points are writable.
type PointSpec = tuple[str, str, str | None, str, float, float]

_AHU_POINTS: tuple[PointSpec, ...] = (
    ("dat", "Discharge Air Temp", "°F", "discharge air temp sensor", 55, 3),
    ("datSp", "Discharge Air Temp Sp", "°F", "discharge air temp sp", 55, 1),
    ("rat", "Return Air Temp", "°F", "return air temp sensor", 72, 2),
    ("mat", "Mixed Air Temp", "°F", "mixed air temp sensor", 62, 4),
    ("oat", "Outside Air Temp", "°F", "outside air temp sensor", 60, 15),
    ("dap", "Discharge Air Pressure", "inH₂O", "discharge air pressure sensor", 1.5, 0.2),
    ("dapSp", "Discharge Air Pressure Sp", "inH₂O", "discharge air pressure sp", 1.5, 0.1),
    ("daf", "Discharge Air Flow", "cfm", "discharge air flow sensor", 12000, 2000),
    ("oaDamper", "Outside Air Damper", "%", "outside air damper cmd", 30, 20),
    ("chwValve", "Chilled Water Valve", "%", "chilled water valve cmd", 40, 30),
    ("hwValve", "Hot Water Valve", "%", "hot water valve cmd", 10, 10),
    ("supplyFanCmd", "Supply Fan Cmd", None, "discharge fan run cmd", 1, 0),
    ("supplyFanStatus", "Supply Fan Status", None, "discharge fan run sensor", 1, 0),
    ("supplyFanSpeed", "Supply Fan Speed", "%", "discharge fan speed cmd", 70, 15),
    ("returnFanSpeed", "Return Fan Speed", "%", "return fan speed cmd", 60, 15),
    ("filterDp", "Filter Differential Pressure", "inH₂O", "filter pressure sensor", 0.6, 0.2),
    ("occ", "Occupied", None, "occupied sp", 1, 0),
    ("enable", "Enable Cmd", None, "enable cmd", 1, 0),
)

_VAV_POINTS: tuple[PointSpec, ...] = (
    ("zat", "Zone Air Temp", "°F", "zone air temp sensor", 72, 2),
    ("zatSp", "Zone Air Temp Sp", "°F", "zone air temp sp", 72, 1),
    ("zaco2", "Zone CO₂", "ppm", "zone air co2 sensor", 600, 150),
    ("daf", "Discharge Air Flow", "cfm", "discharge air flow sensor", 400, 150),
    ("dafSp", "Discharge Air Flow Sp", "cfm", "discharge air flow sp", 400, 100),
    ("dat", "Discharge Air Temp", "°F", "discharge air temp sensor", 60, 5),
    ("damper", "Damper Cmd", "%", "damper cmd", 50, 30),
    ("reheat", "Reheat Valve Cmd", "%", "reheat valve cmd", 10, 10),
)

_METER_POINTS: tuple[PointSpec, ...] = (
    ("power", "Power", "kW", "elec power sensor", 120, 40),
    ("energy", "Energy", "kWh", "elec energy sensor", 250000, 5000),
    ("voltage", "Voltage", "V", "elec volt sensor", 480, 5),
    ("current", "Current", "A", "elec current sensor", 150, 50),
    ("pf", "Power Factor", "", "elec pf sensor", 0.92, 0.04),
)


@dataclass(frozen=True)
class DataSpec:
    """How big the synthetic portfolio is."""

    sites: int = 3
    ahus_per_site: int = 4
    vavs_per_site: int = 110
    meters_per_site: int = 6
    his_samples: int = 24
    his_interval: datetime.timedelta = datetime.timedelta(hours=1)
    seed: int = 7
    end: datetime.datetime = datetime.datetime(2025, 1, 15, tzinfo=datetime.UTC)


@dataclass
class Dataset:
    """Entities (dicts of Haystack values) and the history of every ``his`` point."""

    entities: list[dict[str, Any]] = field(default_factory=list)
    history: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def ids(self, *markers: str) -> list[str]:
        """Ids of the entities carrying every marker in ``markers``, in order."""
        return [e["id"].val for e in self.entities if all(m in e for m in markers)]


def generate(spec: DataSpec | None = None) -> Dataset:
    """Build the portfolio described by ``spec`` (same spec, same data)."""
    spec = spec or DataSpec()
    rng = random.Random(spec.seed)
    data = Dataset()
    for s in range(1, spec.sites + 1):
        site = _site(s, rng)
        data.entities.append(site)
        site_ref: Ref = site["id"]
        tz = site["tz"]
        ahu_refs = []
        for a in range(1, spec.ahus_per_site + 1):
            ahu = _equip(f"s{s}.ahu{a}", f"{site['dis']} AHU-{a}", site_ref, ("ahu",))
            ahu.update(hotWaterHeat=MARKER, chilledWaterCool=MARKER, variableAirVolume=MARKER)
            ahu_refs.append(ahu["id"])
            _add_equip(data, ahu, _AHU_POINTS, site_ref, tz, rng, spec)
        for v in range(1, spec.vavs_per_site + 1):
            vav = _equip(f"s{s}.vav{v}", f"{site['dis']} VAV-{v:03d}", site_ref, ("vav",))
            vav.update(singleDuct=MARKER, hotWaterReheat=MARKER)
            if ahu_refs:
                vav["ahuRef"] = ahu_refs[(v - 1) % len(ahu_refs)]
            _add_equip(data, vav, _VAV_POINTS, site_ref, tz, rng, spec)
        for m in range(1, spec.meters_per_site + 1):
            meter = _equip(
                f"s{s}.meter{m}", f"{site['dis']} Meter-{m}", site_ref, ("meter", "elec")
            )
            if m == 1:
                meter["siteMeter"] = MARKER
            _add_equip(data, meter, _METER_POINTS, site_ref, tz, rng, spec)
    return data


def _site(index: int, rng: random.Random) -> dict[str, Any]:
    city, state, lat, lng, tz = _CITIES[(index - 1) % len(_CITIES)]
    dis = f"{city} Campus {index}"
    return {
        "id": Ref(f"s{index}", dis),
        "dis": dis,
        "site": MARKER,
        "area": Number(float(rng.randrange(40_000, 400_000, 1000)), "ft²"),
        "geoAddr": f"{100 + index} Main St, {city}, {state}",
        "geoCity": city,
        "geoState": state,
        "geoCountry": "US",
        "geoCoord": Coord(round(lat + index * 0.01, 4), round(lng - index * 0.01, 4)),
        "tz": tz,
        "yearBuilt": Number(float(rng.randrange(1965, 2020))),
        "primaryFunction": "Office",
    }


def _equip(ident: str, dis: str, site_ref: Ref, markers: tuple[str, ...]) -> dict[str, Any]:
    entity: dict[str, Any] = {
        "id": Ref(ident, dis),
        "dis": dis,
        "navName": dis.rsplit(" ", 1)[-1],
        "equip": MARKER,
        "siteRef": site_ref,
    }
    entity.update(dict.fromkeys(markers, MARKER))
    return entity


def _add_equip(
    data: Dataset,
    equip: dict[str, Any],
    points: tuple[PointSpec, ...],
    site_ref: Ref,
    tz: str,
    rng: random.Random,
    spec: DataSpec,
) -> None:
    data.entities.append(equip)
    equip_ref: Ref = equip["id"]
    for suffix, dis, unit, markers, nominal, spread in points:
        ident = f"{equip_ref.val}.{suffix}"
        point_dis = f"{equip['dis']} {dis}"
        tags = markers.split()
        point: dict[str, Any] = {
            "id": Ref(ident, point_dis),
            "dis": point_dis,
            "navName": dis,
            "point": MARKER,
            "his": MARKER,
            "kind": "Bool" if unit is None else "Number",
            "tz": tz,
            "siteRef": site_ref,
            "equipRef": equip_ref,
            "curVal": _value(unit, nominal, spread, rng),
            "curStatus": "ok",
        }
        if unit:
            point["unit"] = unit
        if "sp" in tags or "cmd" in tags:
            point["writable"] = MARKER
        point.update(dict.fromkeys(tags, MARKER))
        data.entities.append(point)
        data.history[ident] = [
            {
                "ts": spec.end - spec.his_interval * (spec.his_samples - 1 - i),
                "val": _value(unit, nominal, spread, rng),
            }
            for i in range(spec.his_samples)
        ]


def _value(unit: str | None, nominal: float, spread: float, rng: random.Random) -> Any:
    if unit is None:
        return rng.random() < 0.9 if nominal else rng.random() < 0.1
    return Number(round(rng.gauss(nominal, spread / 2 or 1e-9), 2), unit or None)
