"""Helpers of the BACnet/IP tests: in-process embedded targets, BACpypes3 devices in
subprocesses, scripted responders, sessions."""

from __future__ import annotations

import asyncio
import contextlib
import selectors
import subprocess
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from typing import Any, ClassVar, Self, cast

from bac_py import BACnetApplication, DefaultServerHandlers, DeviceObject
from bac_py.encoding.apdu import (
    AbortPDU,
    ComplexAckPDU,
    ConfirmedRequestPDU,
    ErrorPDU,
    RejectPDU,
    decode_apdu,
    encode_apdu,
)
from bac_py.encoding.primitives import (
    encode_application_object_id,
    encode_application_real,
    encode_application_unsigned,
)
from bac_py.network.npdu import NPDU, decode_npdu, encode_npdu
from bac_py.objects.analog import AnalogInputObject
from bac_py.objects.base import (
    BACnetObject,
    PropertyAccess,
    PropertyDefinition,
    commandable_properties,
    standard_properties,
    status_properties,
)
from bac_py.services.read_property import ReadPropertyACK, ReadPropertyRequest
from bac_py.transport.bvll import decode_bvll, encode_bvll
from bac_py.types.enums import (
    AbortReason,
    BvlcFunction,
    ErrorClass,
    ErrorCode,
    ObjectType,
    PropertyIdentifier,
    RejectReason,
)
from bac_py.types.primitives import ObjectIdentifier

from protobench.protocols.bacnet_ip.options import OPERATIONS, BacnetIpOptions
from protobench.protocols.bacnet_ip.plugin import BacnetIpProtocol
from protobench.protocols.base import AsyncSession, CallbackSession, Session, SessionContext
from protobench.targets.bacnet import device_config, free_udp_port
from protobench.targets.base import Announcement, EmbeddedTarget
from protobench.vocab.errors import OpError
from tests.support.cli import REPO
from tests.support.timing import S

WILDCARD_DEVICE = ObjectIdentifier(ObjectType.DEVICE, 4_194_303)
DEVICE_MODULE = "tests.support.peers.bacpypes3_device"
BACPYPES3_READY = 20 * S
"""How long a BACpypes3 device may take to bind its sockets."""


@contextlib.contextmanager
def bacpypes3_device(*args: str) -> Iterator[tuple[str, int]]:
    """A BACpypes3 device in a subprocess on 127.0.0.1 (:mod:`..peers.bacpypes3_device`).

    Yields its ``HOST:PORT`` and device instance; ``args`` are the script's options.
    """
    port = free_udp_port("127.0.0.1")
    instance = int(args[args.index("--instance") + 1]) if "--instance" in args else 1234
    process = subprocess.Popen(
        [sys.executable, "-m", DEVICE_MODULE, "--port", str(port), *args],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        ready = _read_line(process, BACPYPES3_READY)
        if ready != "ready":
            process.kill()
            _, err = process.communicate(timeout=5)
            raise RuntimeError(f"BACpypes3 device did not start: {ready!r} {err[-2000:]}")
        yield f"127.0.0.1:{port}", instance
    finally:
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)


def _read_line(process: subprocess.Popen[str], limit: float) -> str:
    """The first line the process prints, or '' after ``limit`` seconds or at its exit."""
    assert process.stdout is not None
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        if not selector.select(limit):
            return ""
    return process.stdout.readline().strip()


@contextlib.asynccontextmanager
async def served(target: EmbeddedTarget, **options: Any) -> AsyncIterator[Announcement]:
    """Run an embedded target in this event loop; yield its announcement."""
    announced: asyncio.Future[Announcement] = asyncio.get_running_loop().create_future()
    task = asyncio.create_task(
        target.serve("127.0.0.1", 0, target.options(**options), announced.set_result)
    )
    try:
        yield await asyncio.wait_for(asyncio.shield(announced), 20 * S)
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def open_op(
    url: str,
    op: str,
    params: dict[str, Any] | None = None,
    options: dict[str, Any] | None = None,
    op_timeout: float = 2.0,
    index: int = 0,
) -> Session:
    ctx = SessionContext(
        target=url,
        group=op,
        op=op,
        index=index,
        worker=0,
        params=OPERATIONS[op].model_validate(params or {}),
        options=BacnetIpOptions.model_validate(options or {}),
        timeout=op_timeout,
    )
    return await BacnetIpProtocol().open_session(ctx)


async def exchange(session: Session) -> tuple[OpError | None, int]:
    """One exchange of a callback or async session: (error or None, bytes received)."""
    if isinstance(session, AsyncSession):
        try:
            return None, await session.call()
        except OpError as exc:
            return exc, 0
    done: asyncio.Future[tuple[OpError | None, int]] = asyncio.get_running_loop().create_future()
    cast(CallbackSession, session).submit(lambda error, nbytes: done.set_result((error, nbytes)))
    return await asyncio.wait_for(done, 30)


async def outcome(
    url: str, op: str, params: dict[str, Any] | None = None, **kwargs: Any
) -> tuple[OpError | None, Any]:
    """Open a session, run one exchange, close; return the error and the session."""
    session = await open_op(url, op, params, **kwargs)
    try:
        error, _ = await exchange(session)
    finally:
        await session.close()
    return error, session


class BoundDatagram(asyncio.DatagramProtocol):
    """A UDP endpoint bound to a free port of 127.0.0.1 (:meth:`bind`), its address known."""

    transport: asyncio.DatagramTransport | None = None

    async def bind(self) -> Self:
        await asyncio.get_running_loop().create_datagram_endpoint(
            lambda: self, local_addr=("127.0.0.1", 0)
        )
        return self

    @property
    def address(self) -> str:
        """``host:port`` it is bound to."""
        assert self.transport is not None
        host, port = self.transport.get_extra_info("sockname")[:2]
        return f"{host}:{port}"

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.DatagramTransport, transport)

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()


class Responder(BoundDatagram):
    """A scripted BACnet/IP device on 127.0.0.1: answers ReadProperty with ``value``.

    It records every request as (client address, invoke ID, time); ``silent``
    drops requests, ``delay`` answers late, ``refuse_wildcard`` answers a read of
    device 4194303 with ``object:unknown-object``. It ignores Who-Is.
    """

    def __init__(self, value: float = 61.5) -> None:
        self.value = value
        self.silent = False
        self.refuse_wildcard = False
        self.delay = 0.0
        self.requests: list[tuple[tuple[str, int], int, float]] = []

    @classmethod
    async def start(cls, value: float = 61.5) -> Responder:
        return await cls(value).bind()

    @property
    def url(self) -> str:
        return f"bacnet://{self.address}/?device=1"

    def datagram_received(self, data: bytes, addr: tuple[str, int]) -> None:
        pdu = decode_apdu(decode_npdu(decode_bvll(data).data).apdu)
        if not isinstance(pdu, ConfirmedRequestPDU):
            return
        self.requests.append((addr, pdu.invoke_id, time.monotonic()))
        if self.silent:
            return
        request = ReadPropertyRequest.decode(pdu.service_request)
        if self.refuse_wildcard and request.object_identifier == WILDCARD_DEVICE:
            refusal = ErrorPDU(
                pdu.invoke_id, pdu.service_choice, ErrorClass.OBJECT, ErrorCode.UNKNOWN_OBJECT
            )
            self._reply(encode_apdu(refusal), addr)
            return
        ack = ReadPropertyACK(
            request.object_identifier,
            request.property_identifier,
            request.property_array_index,
            encode_application_real(self.value),
        )
        apdu = encode_apdu(
            ComplexAckPDU(False, False, pdu.invoke_id, None, None, pdu.service_choice, ack.encode())
        )
        self._reply(apdu, addr)

    def _reply(self, apdu: bytes, addr: tuple[str, int]) -> None:
        reply = encode_bvll(BvlcFunction.ORIGINAL_UNICAST_NPDU, encode_npdu(NPDU(apdu=apdu)))
        assert self.transport is not None
        if self.delay:
            asyncio.get_running_loop().call_later(self.delay, self.transport.sendto, reply, addr)
        else:
            self.transport.sendto(reply, addr)


class DropProxy(BoundDatagram):
    """A UDP relay to a device on 127.0.0.1; ``drop`` makes the device go silent."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self.drop = False
        self.links: dict[tuple[str, int], asyncio.DatagramTransport] = {}

    @classmethod
    async def start(cls, upstream: tuple[str, int]) -> DropProxy:
        return await cls(upstream).bind()

    def datagram_received(self, data: bytes, addr: tuple[str, int]) -> None:
        if self.drop:
            return
        link = self.links.get(addr)
        if link is None:
            asyncio.get_running_loop().create_task(self._link(addr, data))
        else:
            link.sendto(data)

    async def _link(self, client: tuple[str, int], first: bytes) -> None:
        proxy = self

        class Back(asyncio.DatagramProtocol):
            def datagram_received(self, data: bytes, addr: tuple[str, int]) -> None:
                if not proxy.drop and proxy.transport is not None:
                    proxy.transport.sendto(data, client)

        loop = asyncio.get_running_loop()
        transport, _ = await loop.create_datagram_endpoint(
            Back, local_addr=("127.0.0.1", 0), remote_addr=self.upstream
        )
        self.links[client] = transport
        transport.sendto(first)

    def close(self) -> None:
        for link in self.links.values():
            link.close()
        super().close()


class SegmentingResponder(BoundDatagram):
    """A device on 127.0.0.1 that sends its object-list in segments of ``size`` bytes.

    It proposes ``window`` segments per SegmentACK, sends the first segment
    alone, then a window after each SegmentACK from the one after the
    acknowledged one, and leaves out segment ``drop`` the first time. It
    records every SegmentACK as (sequence number, negative, window size).
    """

    def __init__(self, objects: int, size: int, window: int, drop: int | None) -> None:
        device = ObjectIdentifier(ObjectType.DEVICE, 1)
        oids = [device] + [ObjectIdentifier(ObjectType.ANALOG_INPUT, i) for i in range(objects)]
        value = b"".join(
            encode_application_object_id(o.object_type, o.instance_number) for o in oids
        )
        ack = ReadPropertyACK(device, PropertyIdentifier.OBJECT_LIST, None, value).encode()
        self.chunks = [ack[i : i + size] for i in range(0, len(ack), size)]
        self.objects = oids
        self.window = window
        self.drop = drop
        self.acks: list[tuple[int, bool, int]] = []
        self.finished = asyncio.Event()
        """Set when the last segment is acknowledged."""
        self.client: tuple[str, int] | None = None
        self.invoke_id = 0

    @classmethod
    async def start(
        cls, objects: int, size: int, window: int, drop: int | None = None
    ) -> SegmentingResponder:
        return await cls(objects, size, window, drop).bind()

    @property
    def port(self) -> int:
        return int(self.address.rpartition(":")[2])

    def datagram_received(self, data: bytes, addr: tuple[str, int]) -> None:
        apdu = decode_npdu(decode_bvll(data).data).apdu
        if apdu[0] >> 4 == 0x4:
            self.acks.append((apdu[2], bool(apdu[0] & 0x02), apdu[3]))
            if self.acks[-1][:2] == (len(self.chunks) - 1, False):
                self.finished.set()
            self._send(apdu[2] + 1, min(self.window, apdu[3]))
            return
        pdu = decode_apdu(apdu)
        assert isinstance(pdu, ConfirmedRequestPDU)
        assert pdu.segmented_response_accepted
        self.client, self.invoke_id = addr, pdu.invoke_id
        self._send(0, 1)

    def _send(self, first: int, count: int) -> None:
        assert self.transport is not None
        assert self.client is not None
        for seq in range(first, min(first + count, len(self.chunks))):
            if seq == self.drop:
                self.drop = None
                continue
            more = seq + 1 < len(self.chunks)
            head = bytes((0x38 | (0x04 if more else 0), self.invoke_id, seq, self.window, 12))
            npdu = encode_npdu(NPDU(apdu=head + self.chunks[seq]))
            self.transport.sendto(
                encode_bvll(BvlcFunction.ORIGINAL_UNICAST_NPDU, npdu), self.client
            )


class ArrayOnlyResponder(BoundDatagram):
    """A small device on 127.0.0.1 without segmentation or ReadPropertyMultiple.

    Device 1 with ``objects`` analog inputs: a read of its whole object-list is
    aborted (segmentation-not-supported), an RPM rejected (unrecognized
    service); element ``i`` of the object-list and every analog input's present
    value are answered. It counts the requests by service.
    """

    def __init__(self, objects: int) -> None:
        device = ObjectIdentifier(ObjectType.DEVICE, 1)
        self.objects = [device] + [
            ObjectIdentifier(ObjectType.ANALOG_INPUT, i) for i in range(objects)
        ]
        self.services: Counter[int] = Counter()

    @classmethod
    async def start(cls, objects: int) -> ArrayOnlyResponder:
        return await cls(objects).bind()

    @property
    def url(self) -> str:
        return f"bacnet://{self.address}/"

    def datagram_received(self, data: bytes, addr: tuple[str, int]) -> None:
        pdu = decode_apdu(decode_npdu(decode_bvll(data).data).apdu)
        if not isinstance(pdu, ConfirmedRequestPDU):
            return
        self.services[pdu.service_choice] += 1
        reply: object
        if pdu.service_choice != 12:
            reply = RejectPDU(pdu.invoke_id, RejectReason.UNRECOGNIZED_SERVICE)
        else:
            request = ReadPropertyRequest.decode(pdu.service_request)
            index = request.property_array_index
            if request.object_identifier.object_type == ObjectType.ANALOG_INPUT:
                value = encode_application_real(1.0)
            elif index is None:
                reply = AbortPDU(True, pdu.invoke_id, AbortReason.SEGMENTATION_NOT_SUPPORTED)
                self._reply(encode_apdu(reply), addr)
                return
            elif index == 0:
                value = encode_application_unsigned(len(self.objects))
            else:
                oid = self.objects[index - 1]
                value = encode_application_object_id(oid.object_type, oid.instance_number)
            ack = ReadPropertyACK(
                request.object_identifier, request.property_identifier, index, value
            )
            reply = ComplexAckPDU(False, False, pdu.invoke_id, None, None, 12, ack.encode())
        self._reply(encode_apdu(reply), addr)  # type: ignore[arg-type]

    def _reply(self, apdu: bytes, addr: tuple[str, int]) -> None:
        assert self.transport is not None
        npdu = encode_npdu(NPDU(apdu=apdu))
        self.transport.sendto(encode_bvll(BvlcFunction.ORIGINAL_UNICAST_NPDU, npdu), addr)


class ColorObject(BACnetObject):
    """A Color object (type 63, addendum 135-2020ca, unnamed in bac-py): an x,y present value."""

    OBJECT_TYPE: ClassVar[ObjectType] = ObjectType(63)
    PROPERTY_DEFINITIONS: ClassVar[dict[PropertyIdentifier, PropertyDefinition]] = {
        **standard_properties(),
        **status_properties(),
        PropertyIdentifier.PRESENT_VALUE: PropertyDefinition(
            PropertyIdentifier.PRESENT_VALUE, list, PropertyAccess.READ_ONLY, required=True
        ),
    }


class ColorTemperatureObject(BACnetObject):
    """A Color Temperature object (type 64, unnamed in bac-py): kelvins, commandable."""

    OBJECT_TYPE: ClassVar[ObjectType] = ObjectType(64)
    PROPERTY_DEFINITIONS: ClassVar[dict[PropertyIdentifier, PropertyDefinition]] = {
        **standard_properties(),
        **status_properties(),
        **commandable_properties(int, 2700),
        PropertyIdentifier.PRESENT_VALUE: PropertyDefinition(
            PropertyIdentifier.PRESENT_VALUE, int, PropertyAccess.READ_WRITE, required=True
        ),
    }

    def __init__(self, instance_number: int, **initial_properties: Any) -> None:
        super().__init__(instance_number, **initial_properties)
        self._init_commandable(2700)
        self._init_status_flags()


@contextlib.asynccontextmanager
async def color_device(instance: int = 6364) -> AsyncIterator[str]:
    """A bac-py device on 127.0.0.1 with object types bac-py does not name: Color 63:1-2 (x,y
    REALs) and Color Temperature 64:1 (2700 K, commandable), and an AnalogInput; yields its URL."""
    host = "127.0.0.1"
    app = BACnetApplication(device_config(instance, host, free_udp_port(host)))
    await app.start()
    try:
        device = DeviceObject(instance, object_name=f"colors-{instance}", vendor_name="test")
        for obj in (
            device,
            ColorObject(1, object_name="Color-1", present_value=[0.3127, 0.329]),
            ColorObject(2, object_name="Color-2", present_value=[0.64, 0.33]),
            ColorTemperatureObject(1, object_name="CCT-1", present_value=2700),
            AnalogInputObject(1, object_name="AI-1", present_value=20.5),
        ):
            app.object_db.add(obj)
        DefaultServerHandlers(app, app.object_db, device).register()
        yield f"bacnet://{host}:{app._transport.local_address.port}/"
    finally:
        await app.stop()
