"""A local static server for web folders: ``python -m oarkit.core.export.web.server DIR [--port 8080]`` serves one on
127.0.0.1 with the COOP/COEP headers that make the page cross-origin isolated, so onnxruntime-web runs its wasm
threads (``python -m http.server`` serves it too, single-threaded)."""

from __future__ import annotations

import argparse
import functools
import threading
from collections.abc import Sequence
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


class StaticServer:
    """A threaded ``http.server`` on ``host`` serving ``folder`` in a background thread (``port=0``: a free one).

    Args:
        folder: the folder served.
        isolated: send ``Cross-Origin-Opener-Policy: same-origin`` and ``Cross-Origin-Embedder-Policy:
            require-corp`` (the page may then use SharedArrayBuffer, hence wasm threads).
    """

    def __init__(self, folder: str | Path, *, isolated: bool = False, host: str = "127.0.0.1", port: int = 0) -> None:
        class Handler(SimpleHTTPRequestHandler):
            extensions_map = {**SimpleHTTPRequestHandler.extensions_map, ".js": "text/javascript",
                              ".mjs": "text/javascript", ".wasm": "application/wasm", ".json": "application/json"}

            def end_headers(self) -> None:
                self.send_header("Cache-Control", "no-store")
                if isolated:
                    self.send_header("Cross-Origin-Opener-Policy", "same-origin")
                    self.send_header("Cross-Origin-Embedder-Policy", "require-corp")
                super().end_headers()

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

        self.folder = Path(folder)
        self.httpd = ThreadingHTTPServer((host, port), functools.partial(Handler, directory=str(self.folder)))
        self.httpd.daemon_threads = True
        self.url = f"http://{host}:{self.httpd.server_address[1]}/"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        """Stop serving and free the port."""
        self.httpd.shutdown()
        self.httpd.server_close()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", help="a folder written by `oarkit export ... --format web`")
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--no-isolation", action="store_true", help="leave out COOP/COEP (one wasm thread)")
    args = parser.parse_args(argv)
    server = StaticServer(args.folder, isolated=not args.no_isolation, port=args.port)
    print(f"serving {args.folder} at {server.url} (Ctrl-C stops)")
    try:
        server.thread.join()
    except KeyboardInterrupt:
        server.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
