"""The 40-object stress server of bac-py's benchmarks, built on a ``BACnetApplication``.

Device + 10 AnalogInput (present value 60 + 1.5·i; units °F, °C, %RH, Pa,
L/s, W, kWh, A, V, Hz) + 5 AnalogOutput (50 + i, °F) + 5 AnalogValue (70 + i,
°F, commandable) + 5 BinaryInput + 3 BinaryOutput + 3 BinaryValue
(commandable) + 3 MultiStateInput (4 states) + 2 MultiStateValue
(commandable, 3 states) + Schedule + Calendar + NotificationClass (priority
3/3/3, ack required on to-offnormal only) = 40 objects, served by bac-py's
default handlers.

With drift, the analog inputs move by a quarter step every interval
(+0, +0.25, +0.5, +0.25 around their base value) so that COV subscribers
receive notifications. A drifting analog input is out of service (a
simulated value, as in a simulator), which is how the BACnet object model lets
the device itself write its present value.
"""

from __future__ import annotations

import asyncio
import itertools

import bac_py
from bac_py import BACnetApplication, DefaultServerHandlers, DeviceObject
from bac_py.objects.analog import AnalogInputObject, AnalogOutputObject, AnalogValueObject
from bac_py.objects.base import BACnetObject
from bac_py.objects.binary import BinaryInputObject, BinaryOutputObject, BinaryValueObject
from bac_py.objects.calendar import CalendarObject
from bac_py.objects.multistate import MultiStateInputObject, MultiStateValueObject
from bac_py.objects.notification import NotificationClassObject
from bac_py.objects.schedule import ScheduleObject
from bac_py.types.enums import EngineeringUnits, PropertyIdentifier

OBJECT_COUNT = 40
AI_UNITS = (
    EngineeringUnits.DEGREES_FAHRENHEIT,
    EngineeringUnits.DEGREES_CELSIUS,
    EngineeringUnits.PERCENT_RELATIVE_HUMIDITY,
    EngineeringUnits.PASCALS,
    EngineeringUnits.LITERS_PER_SECOND,
    EngineeringUnits.WATTS,
    EngineeringUnits.KILOWATT_HOURS,
    EngineeringUnits.AMPERES,
    EngineeringUnits.VOLTS,
    EngineeringUnits.HERTZ,
)
DRIFT_STEPS = (0.0, 0.25, 0.5, 0.25)


def ai_value(instance: int) -> float:
    """The base present value of AnalogInput ``instance``."""
    return 60.0 + 1.5 * instance


def add_stress_objects(
    app: BACnetApplication, device_instance: int, drift: bool
) -> list[AnalogInputObject]:
    """Add the 40 objects and the default handlers; return the analog inputs."""
    db = app.object_db
    device = DeviceObject(
        device_instance,
        object_name=f"protobench-stress-{device_instance}",
        vendor_name="bac-py",
        vendor_identifier=0,
        model_name="protobench stress server",
        firmware_revision=bac_py.__version__,
        application_software_version=bac_py.__version__,
    )
    db.add(device)
    inputs = [
        AnalogInputObject(
            i,
            object_name=f"AI-{i}",
            present_value=ai_value(i),
            units=AI_UNITS[i - 1],
            out_of_service=drift,
        )
        for i in range(1, 11)
    ]
    objects: list[BACnetObject] = [*inputs]
    objects += [
        AnalogOutputObject(
            i,
            object_name=f"AO-{i}",
            present_value=50.0 + i,
            units=EngineeringUnits.DEGREES_FAHRENHEIT,
        )
        for i in range(1, 6)
    ]
    objects += [
        AnalogValueObject(
            i,
            object_name=f"AV-{i}",
            present_value=70.0 + i,
            units=EngineeringUnits.DEGREES_FAHRENHEIT,
            commandable=True,
        )
        for i in range(1, 6)
    ]
    objects += [BinaryInputObject(i, object_name=f"BI-{i}") for i in range(1, 6)]
    objects += [BinaryOutputObject(i, object_name=f"BO-{i}") for i in range(1, 4)]
    objects += [BinaryValueObject(i, object_name=f"BV-{i}", commandable=True) for i in range(1, 4)]
    objects += [
        MultiStateInputObject(i, object_name=f"MSI-{i}", number_of_states=4) for i in range(1, 4)
    ]
    objects += [
        MultiStateValueObject(i, object_name=f"MSV-{i}", commandable=True, number_of_states=3)
        for i in range(1, 3)
    ]
    objects += [
        ScheduleObject(1, object_name="Schedule-1"),
        CalendarObject(1, object_name="Calendar-1"),
        NotificationClassObject(
            1, object_name="NC-1", priority=[3, 3, 3], ack_required=[True, False, False]
        ),
    ]
    for obj in objects:
        db.add(obj)
    DefaultServerHandlers(app, db, device).register()
    return inputs


async def drift_forever(
    app: BACnetApplication, inputs: list[AnalogInputObject], interval: float
) -> None:
    """Move the analog inputs' present values every ``interval`` and notify COV subscribers."""
    for step in itertools.cycle(DRIFT_STEPS[1:] + DRIFT_STEPS[:1]):
        await asyncio.sleep(interval)
        for obj in inputs:
            obj.write_property(
                PropertyIdentifier.PRESENT_VALUE,
                ai_value(obj.object_identifier.instance_number) + step,
            )
            if app.cov_manager is not None:
                app.cov_manager.check_and_notify(obj, PropertyIdentifier.PRESENT_VALUE)
