"""Forms posted to a page the way no browser on it posts them."""

from __future__ import annotations

import http.client
import urllib.error
import urllib.request
from urllib.parse import urlsplit

FORM = {"Content-Type": "application/x-www-form-urlencoded"}


def post(url: str, data: bytes, headers: dict[str, str]) -> int:
    request = urllib.request.Request(url, data=data, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


def post_chunked(url: str, chunks: list[bytes], headers: dict[str, str]) -> int:
    """POST with ``Transfer-Encoding: chunked``: the body's size is said nowhere before it ends."""
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    try:
        connection.putrequest("POST", parts.path)
        for name, value in {**headers, "Transfer-Encoding": "chunked"}.items():
            connection.putheader(name, value)
        connection.endheaders()
        for chunk in chunks:
            connection.send(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        connection.send(b"0\r\n\r\n")
        return connection.getresponse().status
    finally:
        connection.close()


def refusals(url: str) -> dict[str, int]:
    """The status of each post a page must refuse before reading it as its form."""
    return {
        "chunked, past the limit": post_chunked(url, [b"description=" + b"x" * 8192] * 12, FORM),
        "multipart": post(url, b'--b\r\nContent-Disposition: form-data; name="f"; filename="f"\r\n\r\n'
                               b"x\r\n--b--\r\n", {"Content-Type": "multipart/form-data; boundary=b"}),
        "not UTF-8": post(url, b"verb=\xff\xfe", FORM),
        "too many fields": post(url, b"&".join(b"f%d=1" % i for i in range(65)), FORM),
    }


REFUSED = {"chunked, past the limit": 413, "multipart": 415, "not UTF-8": 400, "too many fields": 400}
