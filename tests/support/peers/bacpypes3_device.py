"""A BACnet/IP device built on BACpypes3 (an independent stack), run as a subprocess by tests.

``python -m tests.support.peers.bacpypes3_device --port P [options]`` binds
127.0.0.1:P (and BACpypes3's broadcast listener on 127.255.255.255:P: the
address ``127.0.0.1/8:P`` makes 127.255.255.255 its broadcast address) and
serves, with BACpypes3's own services (ReadProperty, WriteProperty, RPM, WPM,
Who-Is, SubscribeCOV):

* Device ``--instance`` (default 1234); BACpypes3 refuses the wildcard
  instance 4194303 (``object:unknown-object``);
* ``--analog-inputs`` AnalogInputs (present value 60 + 1.5·i, °F);
* AnalogValue 1-5 and BinaryValue 1-3, commandable;
* MultiStateValue 1-2 and NotificationClass 1 (an empty recipient-list);
* ``--no-segmentation``: the device declares segmentation-not-supported, so a
  reply larger than one APDU is an Abort;
* ``--bbmd``: the port is a BBMD accepting foreign devices;
* ``--drift``: AnalogInput 1 moves every 0.2 s (COV notifications flow);
* ``--timer``: a Timer 1 (present value 0) first in the object-list, which
  BACpypes3 refuses to subscribe to (``services:cov-subscription-failed``);
* ``--counts FILE``: count the ReadProperty and WriteProperty requests it
  handles, by object (``read-property analog-input,1 N`` lines), written to
  FILE when it is terminated (SIGTERM).

It prints ``ready`` once its sockets are bound.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import signal
from collections import Counter
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from bacpypes3.app import Application
from bacpypes3.basetypes import BDTEntry, IPMode, Segmentation
from bacpypes3.local.analog import AnalogInputObject, AnalogValueObjectCmd
from bacpypes3.local.binary import BinaryValueObjectCmd
from bacpypes3.local.device import DeviceObject
from bacpypes3.local.multistate import MultiStateValueObject
from bacpypes3.local.networkport import NetworkPortObject
from bacpypes3.object import NotificationClassObject, TimerObject

NORMAL = {"statusFlags": [0, 0, 0, 0], "eventState": "normal", "outOfService": False}


def objects(args: argparse.Namespace) -> list[Any]:
    device = DeviceObject(
        objectIdentifier=("device", args.instance),
        objectName=f"bacpypes3-{args.instance}",
        vendorIdentifier=999,
    )
    if args.no_segmentation:
        device.segmentationSupported = Segmentation.noSegmentation
    port = NetworkPortObject(
        f"127.0.0.1/8:{args.port}",
        objectIdentifier=("network-port", 1),
        objectName="NetworkPort-1",
    )
    if args.bbmd:
        port.bacnetIPMode = IPMode.bbmd
        port.bbmdAcceptFDRegistrations = True
        port.bbmdForeignDeviceTable = []
        port.bbmdBroadcastDistributionTable = [BDTEntry(f"127.0.0.1:{args.port}")]
    found: list[Any] = [device, port]
    if args.timer:
        found.append(
            TimerObject(
                objectIdentifier=("timer", 1),
                objectName="Timer-1",
                presentValue=0,
                statusFlags=[0, 0, 0, 0],
                timerState="idle",
                timerRunning=False,
            )
        )
    found += [
        AnalogInputObject(
            objectIdentifier=("analog-input", i),
            objectName=f"AI-{i}",
            presentValue=60.0 + 1.5 * i,
            units="degreesFahrenheit",
            covIncrement=0.1,
            **NORMAL,
        )
        for i in range(1, args.analog_inputs + 1)
    ]
    found += [
        AnalogValueObjectCmd(
            objectIdentifier=("analog-value", i),
            objectName=f"AV-{i}",
            presentValue=70.0 + i,
            relinquishDefault=70.0 + i,
            units="degreesFahrenheit",
            **NORMAL,
        )
        for i in range(1, 6)
    ]
    found += [
        BinaryValueObjectCmd(
            objectIdentifier=("binary-value", i),
            objectName=f"BV-{i}",
            presentValue="inactive",
            relinquishDefault="inactive",
            **NORMAL,
        )
        for i in range(1, 4)
    ]
    found += [
        MultiStateValueObject(
            objectIdentifier=("multi-state-value", i),
            objectName=f"MSV-{i}",
            presentValue=1,
            numberOfStates=3,
            **NORMAL,
        )
        for i in range(1, 3)
    ]
    found.append(
        NotificationClassObject(
            objectIdentifier=("notification-class", 1),
            objectName="NC-1",
            notificationClass=1,
            priority=[3, 3, 3],
            ackRequired=[1, 0, 0],
            recipientList=[],
        )
    )
    return found


async def drift(app: Application) -> None:
    ai1 = app.objectIdentifier[next(k for k in app.objectIdentifier if str(k) == "analog-input,1")]
    for step in itertools.cycle((0.25, 0.5, 0.25, 0.0)):
        await asyncio.sleep(0.2)
        ai1.presentValue = 61.5 + step


def count_requests(app: Application, path: Path) -> None:
    """Count the ReadProperty and WriteProperty requests ``app`` handles; write the counts to
    ``path`` and stop at SIGTERM."""
    seen: Counter[tuple[str, str]] = Counter()

    def counting(op: str, handler: Callable[[Any], Awaitable[None]]) -> Any:
        async def wrapper(apdu: Any) -> None:
            seen[op, str(apdu.objectIdentifier)] += 1
            await handler(apdu)

        return wrapper

    app.do_ReadPropertyRequest = counting("read-property", app.do_ReadPropertyRequest)
    app.do_WritePropertyRequest = counting("write-property", app.do_WritePropertyRequest)

    def stop() -> None:
        path.write_text("".join(f"{op} {oid} {n}\n" for (op, oid), n in seen.items()))
        raise SystemExit(0)

    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--instance", type=int, default=1234)
    parser.add_argument("--analog-inputs", type=int, default=10)
    parser.add_argument("--no-segmentation", action="store_true")
    parser.add_argument("--bbmd", action="store_true")
    parser.add_argument("--drift", action="store_true")
    parser.add_argument("--timer", action="store_true")
    parser.add_argument("--counts", type=Path)
    args = parser.parse_args()
    app = Application.from_object_list(objects(args))
    if args.counts:
        count_requests(app, args.counts)
    for link in app.link_layers.values():
        server = getattr(link, "server", None)
        tasks = getattr(server, "_transport_tasks", [])
        await asyncio.gather(*tasks)
    print("ready", flush=True)
    if args.drift:
        await drift(app)
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main())
