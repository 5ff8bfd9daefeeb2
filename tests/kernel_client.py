"""Run code on a Jupyter kernel through a server's websocket (the messaging protocol's JSON form), as a browser does."""
import asyncio
import datetime
import json
import uuid

from tornado.httpclient import HTTPRequest
from tornado.websocket import websocket_connect

SECONDS = 600  # a cell that runs longer is a runaway (a check runs in seconds)


def run_cells(address, token, sources):
    """[the text each cell printed (stdout and stderr, results, errors)] for sources run in order; stops after the
    first cell that raised."""
    return asyncio.run(_run_cells(address, token, sources))


async def _run_cells(address, token, sources):
    connection = await websocket_connect(HTTPRequest(address, headers={"Authorization": f"token {token}"}))
    session, printed = uuid.uuid4().hex, []
    try:
        for source in sources:
            text, failed = await asyncio.wait_for(_execute(connection, session, source), SECONDS)
            printed.append(text)
            if failed:
                break
    finally:
        connection.close()
    return printed


async def _execute(connection, session, source):
    msg_id = uuid.uuid4().hex
    header = {"msg_id": msg_id, "session": session, "username": "student", "msg_type": "execute_request",
              "version": "5.3", "date": datetime.datetime.now(datetime.timezone.utc).isoformat()}
    await connection.write_message(json.dumps({
        "channel": "shell", "header": header, "parent_header": {}, "metadata": {}, "buffers": [],
        "content": {"code": source, "silent": False, "store_history": True, "user_expressions": {},
                    "allow_stdin": False, "stop_on_error": True}}))
    text, failed = [], False
    while True:
        message = await connection.read_message()
        if message is None:
            raise ConnectionError("the kernel's websocket closed")
        message = json.loads(message)
        if message.get("parent_header", {}).get("msg_id") != msg_id or message.get("channel") != "iopub":
            continue
        kind, content = message["msg_type"], message["content"]
        if kind == "stream":
            text.append(content["text"])
        elif kind in ("execute_result", "display_data"):
            text.append(content["data"].get("text/plain", ""))
        elif kind == "error":
            failed = True
            text.append("\n".join(content["traceback"]))
        elif kind == "status" and content["execution_state"] == "idle":
            return "".join(text), failed
