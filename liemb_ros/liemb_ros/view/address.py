"""
Where the view's page is served: the port and address checks, and the page's URL.

:func:`check_address` is run before the server starts, so a bad port, a taken port or an
address that is not this machine's raises :class:`ViewError` naming it instead of failing
inside viser; :func:`page_address` says where the page is (a wildcard address as every
interface, with a URL that opens it here) and warns when it is open to the network.
"""
import ipaddress
import socket

DEFAULT_HOST = '127.0.0.1'
DEFAULT_PORT = 8080


class ViewError(RuntimeError):
    """The view cannot start: the address or port cannot be served."""


def check_port(port):
    """
    Return ``port`` as an int if it is one a server can listen on (0..65535; 0: a free one).

    Raises :class:`ViewError` with the reason otherwise (negative, too large, not a whole
    number).
    """
    try:
        number = int(port)
        whole = number == port or str(number) == str(port).strip()
    except (TypeError, ValueError, OverflowError):
        whole = False
    if not whole or not 0 <= number <= 65535:
        raise ViewError(f'liemb view: port {port!r} is not a port: give 0..65535 (0: a free '
                        'one)')
    return number


def check_address(host, port):
    """
    Return a port that ``host`` can serve on (``port``, or a free one for 0).

    Raises :class:`ViewError` naming the address when the port is not one (outside
    0..65535), is taken, or the address is not one of this machine's.
    """
    port = check_port(port)
    try:
        with socket.socket(socket.AF_INET6 if ':' in host else socket.AF_INET) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server does
            s.bind((host, port))
            return s.getsockname()[1]
    except OSError as exc:
        taken = exc.errno in (98, 48)  # EADDRINUSE (Linux, macOS)
        why = ('is in use by another program; choose another with --port' if taken else
               f'cannot be served ({exc.strerror}); give an address of this machine with '
               '--host')
        raise ViewError(f'liemb view: {_hostport(host, port)} {why}') from None


def _hostport(host, port):
    """``host:port`` with an IPv6 address in brackets, as in a URL."""
    return f'[{host}]:{port}' if ':' in host else f'{host}:{port}'


def _loopback(host):
    """Return whether every address ``host`` stands for is a loopback one."""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:   # a name: what it resolves to
        pass
    try:
        found = {info[4][0] for info in socket.getaddrinfo(host, None)}
    except (OSError, UnicodeError):
        return False
    return bool(found) and all(ipaddress.ip_address(a.partition('%')[0]).is_loopback
                               for a in found)


def page_address(host, port):
    """
    Say where a page served on ``host``, ``port`` is: ``(url, where, warning)``.

    ``url`` opens the page on this machine: ``http://HOST:PORT`` for an address or a name
    as given (an IPv6 address in brackets); for the wildcard addresses (``''`` and
    ``0.0.0.0``: every IPv4 interface, ``''`` IPv6 too; ``::``: every interface)
    the loopback address of the same family.  ``where`` is empty, or for a wildcard
    says it listens on every interface and how other machines reach it.  ``warning`` is
    None on a loopback address, else says that the page is open to the network.
    """
    wildcard = {'': '127.0.0.1', '0.0.0.0': '127.0.0.1', '::': '::1'}
    if host in wildcard:
        url = f'http://{_hostport(wildcard[host], port)}'
        listen = f'http://{_hostport(host or "0.0.0.0", port)}'
        where = (f'it listens on every interface, {listen}; from other machines: '
                 f"http://{_hostport(socket.gethostname(), port)} or this machine's IP address")
        who = 'every interface'
    else:
        url = f'http://{_hostport(host, port)}'
        where = ''
        if _loopback(host):
            return url, where, None
        who = f'{host}, not a loopback address'
    return url, where, (f'the page listens on {who}: it is open to the network (anyone who '
                        'reaches this machine sees the robot and its meshes and moves its '
                        'sliders); --host 127.0.0.1 keeps it to this machine')
