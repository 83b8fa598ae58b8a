"""
Lean messages for the 1 kHz path: joint states read from and outputs written to CDR bytes.

Measured on this project's 2-core machine (Kilted, rmw_fastrtps_cpp, Panda, 9 joints):
rclpy turns a received ``sensor_msgs/JointState`` into its Python object in 45 µs, and
building one plus its serialisation in ``publish`` costs 40 µs, against 60 µs for the
whole dynamics of a cycle.  So the dynamics node

* subscribes to ``joint_states`` raw (``raw=True``: the callback gets the CDR bytes) and
  reads names, positions, velocities and the stamp with :func:`read_joint_state`, which
  decodes the names only when they differ from the last message's (a message it cannot
  read this way, e.g. big-endian, falls back to rclpy's deserialisation);
* publishes its torques and effort command through a :class:`Template`: the message is
  serialised once, the byte offsets of its stamp and float64 arrays are located, and each
  cycle writes the new numbers there and publishes the bytes (``Publisher.publish(bytes)``).

Subscribers receive ordinary messages: the bytes are exactly what rclpy would have
serialised (tested against ``rclpy.serialization``).

CDR (OMG XCDR version 1, as Fast DDS and Cyclone DDS write ROS 2 messages): a 4-byte
encapsulation header (``00 01``: little-endian), then the fields in order, each aligned to
its size relative to the end of the header; a string is a uint32 length (counting its NUL)
and the bytes with the NUL; a sequence is a uint32 count and the elements.
"""
import struct

import numpy as np
from rclpy.serialization import deserialize_message, serialize_message

_U32 = struct.Struct('<I')
_STAMP = struct.Struct('<iI')
_CDR_LE = b'\x00\x01'
_NAMES_CACHE = 64
_F64 = np.dtype('<f8')
_DOUBLES = {}   # n -> unpack_from of n little-endian float64
_PROBE_STAMP = (0x2F3A5B61, 0x1D2C3B4A)


class Template:
    """
    One message serialised once, refilled in place: ``fill(sec, nanosec, *arrays)``.

    ``msg``: the message as it will be published, with every float64 array of ``fields``
    already of its final length.  Each field is an attribute path to a float64 sequence
    (``'effort'``, ``'data'``) or a list of paths to float64 scalars that make one array
    (``['twists[0].angular.x', ...]``).  ``stamp``: with True the message's
    ``header.stamp``, or a list of paths to ``builtin_interfaces/Time`` fields (every one
    gets the same stamp), or False.  :meth:`fill` returns the bytes to publish with the
    given stamp and arrays (one float64 array per field, of its size, in its order).

    In CDR (version 1) every float64 lies 8-aligned after the 4-byte encapsulation header
    and every stamp 4-aligned: the bytes are refilled through one float64 and one uint32
    view, at the indices the probe values (unique, written before serialising) were found.
    """

    def __init__(self, msg, fields, stamp=True):
        self.type = type(msg)
        stamps = ['header.stamp'] if stamp is True else list(stamp or ())
        rng = np.random.default_rng(0x5eed)
        probes = []   # per field: the probe values (sequence field) or one per scalar path
        for k, field in enumerate(fields):
            if isinstance(field, str):   # a float64 sequence
                obj, name = _owner(msg, field)
                probe = rng.uniform(1e3, 2e3, len(getattr(obj, name))) + k
                setattr(obj, name, probe.tolist())
                probes.append((True, probe, field))
            else:                        # float64 scalars
                probe = rng.uniform(1e3, 2e3, len(field)) + k
                for path, x in zip(field, probe):
                    setattr(*_owner(msg, path), float(x))
                probes.append((False, probe, field))
        for path in stamps:
            t = _resolve(msg, path)
            t.sec, t.nanosec = _PROBE_STAMP
        data = serialize_message(msg)
        if data[:2] != _CDR_LE:
            raise ValueError('not little-endian CDR')
        self.lengths = [len(p) for _, p, _ in probes]
        self._index = []   # per field: a slice or an index array into the float64 view
        for whole, probe, field in probes:
            if whole:
                if len(probe):
                    at = _f64_index(_find_once(data, probe.tobytes(), field))
                    self._index.append(slice(at, at + len(probe)))
                else:
                    self._index.append(slice(0, 0))
            else:
                idx = np.array([_f64_index(_find_once(data, np.float64(x).tobytes(), path))
                                for x, path in zip(probe, field)], dtype=np.int64)
                n = idx.size
                contiguous = n and np.array_equal(idx, np.arange(idx[0], idx[0] + n))
                self._index.append(slice(idx[0], idx[0] + n) if contiguous else idx)
        at, spots = data.find(_STAMP.pack(*_PROBE_STAMP)), []
        while at >= 0:
            spots.append(at)
            at = data.find(_STAMP.pack(*_PROBE_STAMP), at + 1)
        if len(spots) != len(stamps) or any(at % 4 for at in spots):
            raise ValueError('cannot locate the stamps in the serialised message')
        self._buf = bytearray(data)
        self._f64 = np.frombuffer(self._buf, dtype=_F64, offset=4, count=(len(data) - 4) // 8)
        self._u32 = np.frombuffer(self._buf, dtype='<u4', count=len(data) // 4)
        self._sec = np.array([at // 4 for at in spots], dtype=np.int64)
        self._nanosec = self._sec + 1

    def fill(self, sec, nanosec, *arrays):
        """Return the serialised message with this stamp and these float64 arrays."""
        for a, idx, n in zip(arrays, self._index, self.lengths):
            if a.size != n or a.dtype != _F64:
                raise ValueError(f'expected {n} float64 values, got {a.shape} {a.dtype}')
            self._f64[idx] = a.reshape(-1)
        if self._sec.size:
            self._u32[self._sec] = sec & 0xFFFFFFFF
            self._u32[self._nanosec] = nanosec
        return bytes(self._buf)


def _resolve(msg, path):
    """Return the object at ``path`` (attribute names, ``name[k]`` for an element)."""
    for part in path.split('.'):
        name, _, k = part.partition('[')
        msg = getattr(msg, name)
        if k:
            msg = msg[int(k.rstrip(']'))]
    return msg


def _owner(msg, path):
    """Return the object that holds the last attribute of ``path``, and its name."""
    parent, _, name = path.rpartition('.')
    return (_resolve(msg, parent) if parent else msg), name


def _f64_index(offset):
    """Index in the float64 view (which starts after the 4-byte header) of a byte offset."""
    if (offset - 4) % 8:
        raise ValueError('a float64 not 8-aligned in the CDR payload')
    return (offset - 4) // 8


def _find_once(data, needle, what):
    at = data.find(needle)
    if at < 0 or data.find(needle, at + 1) >= 0:
        raise ValueError(f'cannot locate {what} in the serialised message')
    return at


class JointStateReader:
    """
    Read ``sensor_msgs/JointState`` CDR bytes into tuples.

    :meth:`read` returns ``(names, positions, velocities, (sec, nanosec))``: ``names`` a
    tuple of str (the same tuple object while the names stay the same), positions and
    velocities tuples of floats (velocities may be empty).  The names are decoded only when
    the bytes that encode them (padding masked out) differ from the last message's.  Bytes
    that are not little-endian CDR or do not add up go to rclpy's deserialisation, which
    raises for a malformed message.
    """

    def __init__(self, msg_type):
        self.msg_type = msg_type
        self._key = None             # (start, end, mask, masked value) of the last names
        self._names = ()

    def read(self, data):
        """Return the names, positions, velocities and stamp of the serialised message."""
        if data[:2] == _CDR_LE:
            try:
                got = self._read_cdr(data)
            except (struct.error, ValueError, IndexError, UnicodeDecodeError):
                got = None
            if got is not None:
                return got
        msg = deserialize_message(data, self.msg_type)
        s = msg.header.stamp
        return (tuple(msg.name), tuple(msg.position), tuple(msg.velocity),
                (s.sec, s.nanosec))

    def _read_cdr(self, data):
        end = len(data)
        stamp = _STAMP.unpack_from(data, 4)
        o = (16 + _U32.unpack_from(data, 12)[0] + 3) & ~3   # past header.frame_id
        # offsets count from the buffer start; the payload starts at 4, a multiple of 4
        key = self._key
        if key is not None and key[0] == o and (
                int.from_bytes(data[o:key[1]], 'little') & key[2]) == key[3]:
            names, o = self._names, key[1]
        else:
            names, o = self._read_names(data, o, end)
            if names is None:
                return None
        pos, o = self._doubles(data, o, end)
        vel, o = self._doubles(data, o, end)
        if pos is None or vel is None or not _whole_doubles(data, o, end):
            return None    # (effort is not read, but a message cut there is no message)
        return names, pos, vel, stamp

    def _read_names(self, data, start, end):
        count = _U32.unpack_from(data, start)[0]
        o = start + 4
        names, mask = [], (1 << 32) - 1   # the count's bytes
        for _ in range(count):
            pad = -o & 3
            o += pad
            n = _U32.unpack_from(data, o)[0]
            if n == 0 or o + 4 + n > end:
                return None, o
            names.append(data[o + 4:o + 3 + n].decode('utf-8'))
            mask |= ((1 << 8 * (4 + n)) - 1) << 8 * (o - start)
            o += 4 + n
        self._names = tuple(names)
        self._key = (start, o, mask, int.from_bytes(data[start:o], 'little') & mask)
        return self._names, o

    def _doubles(self, data, o, end):
        """Read a sequence<float64> at ``o``; return (tuple of floats, next offset)."""
        o = (o + 3) & ~3
        if o + 4 > end:
            return None, o
        n = _U32.unpack_from(data, o)[0]
        o += 4
        if n == 0:
            return (), o
        o += -(o - 4) & 7    # doubles align to 8 in the payload (which starts at 4)
        if o + 8 * n > end:
            return None, o
        unpack = _DOUBLES.get(n)
        if unpack is None:
            unpack = struct.Struct(f'<{n}d').unpack_from
            if n <= 1024:
                _DOUBLES[n] = unpack
        return unpack(data, o), o + 8 * n


def _whole_doubles(data, o, end):
    """Tell whether a whole sequence<float64> lies at ``o``."""
    o = (o + 3) & ~3
    if o + 4 > end:
        return False
    n = _U32.unpack_from(data, o)[0]
    return n == 0 or 4 + ((o + 4 - 4 + 7) & ~7) + 8 * n <= end
