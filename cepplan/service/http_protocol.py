"""uvicorn's HTTP protocol (httptools, the parser `cepplan serve` runs on), answering a request
it cannot parse — `Content-Length: -1`, a malformed request line or header — with a problem
document like every other error, instead of uvicorn's plain-text 400."""

from __future__ import annotations

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from cepplan.service.problems import MEDIA_TYPE, problem_body

UNPARSABLE = ("the request is not valid HTTP: a malformed request line or header (such as a "
              "negative or non-numeric Content-Length)")


class ProblemHttpProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with its answer to an unparsable request replaced."""

    def send_400_response(self, msg: str) -> None:
        """uvicorn calls this when httptools rejects the bytes received; the connection
        closes after the answer, as uvicorn's own does."""
        body = problem_body(400, UNPARSABLE)
        head = [b"HTTP/1.1 400 Bad Request\r\n",
                *(name + b": " + value + b"\r\n"
                  for name, value in self.server_state.default_headers),
                f"content-type: {MEDIA_TYPE}\r\n".encode(),
                f"content-length: {len(body)}\r\n".encode(), b"connection: close\r\n\r\n"]
        self.transport.write(b"".join(head) + body)
        self.transport.close()
