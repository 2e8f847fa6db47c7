#!/usr/bin/env python3
"""An aqlguard command channel: questions and codes in a spool directory.

    [verify]
    channel = "command"
    command = ["/opt/aqlguard/spool-channel.py", "/var/spool/aqlguard"]

aqlguard runs this program once per request, with one JSON object on its
stdin (docs/command-channel.md). For a confirmation it writes
TOKEN.question (what the agent wants, in words, then the request as JSON)
and waits until the question expires for a file TOKEN.answer holding
allow, allow_session or deny; it prints that answer. For a verification
code it writes CHALLENGE_ID.code and exits. Everything it writes is 0600
in a 0700 directory: make that directory unreadable to the agent (run
aqlguard as its own OS user; see docs/threat-model.md) and answer from
another device, e.g.

    ssh aqlguard@host cat /var/spool/aqlguard/*.question
    ssh aqlguard@host 'echo allow > /var/spool/aqlguard/conf_1234.answer'
    ssh aqlguard@host cat /var/spool/aqlguard/*.code

No answer, a malformed one or an expired question approves nothing: the
program just prints nothing.

A question's file goes when its question ends: answered, expired, or
withdrawn by aqlguard (the call's client went away), which stops this
program with SIGTERM. Code files stay until their code expires; each run
removes the files of questions and codes that have expired.
"""

import datetime
import json
import os
import re
import signal
import sys
import time

SAFE_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")


def write_private(path, text):
    """Create path whole (never overwrite, never follow a planted symlink), 0600.

    The text goes to a hidden file first, which is then linked to path: a
    human's tool watching the spool never reads a question half written
    (or empty, as it was between create and write), and link, unlike
    rename, fails where path exists.
    """
    part = os.path.join(os.path.dirname(path), "." + os.path.basename(path) + ".part")
    fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.link(part, path)
    finally:
        os.unlink(part)


def describe(req):
    lines = [
        f"{req['agent']} ({req.get('client') or 'unknown client'}) wants to call "
        f"{req.get('server') or '?'}/{req.get('tool') or req['operation']}",
        f"why: {req['reason']} (tier {req['tier']})",
        f"expires: {req['expires_at']}",
        f"answer with one of: {', '.join(req['answers'])}",
        "",
        json.dumps(req, indent=2, ensure_ascii=False),
        "",
    ]
    return "\n".join(lines)


def parse_time(text):
    return datetime.datetime.fromisoformat(text.strip().replace("Z", "+00:00"))


def expiry(req):
    return parse_time(req["expires_at"])


def sweep(spool):
    """Remove the files of questions and codes that have expired (their
    "expires:" line is past), and answers left without a question."""
    now = datetime.datetime.now(datetime.timezone.utc)
    for name in os.listdir(spool):
        path = os.path.join(spool, name)
        base, ext = os.path.splitext(name)
        try:
            if ext in (".question", ".code"):
                with open(path, encoding="utf-8") as f:
                    for line in f:
                        if line.startswith("expires: "):
                            if parse_time(line[len("expires: "):]) < now:
                                os.remove(path)
                            break
            elif ext == ".answer" and not os.path.exists(os.path.join(spool, base + ".question")):
                os.remove(path)
        except (OSError, ValueError):
            pass  # another run removed it, or it is not ours to judge


def main():
    if len(sys.argv) != 2:
        print("usage: spool-channel.py DIR", file=sys.stderr)
        return 2
    spool = sys.argv[1]
    os.makedirs(spool, mode=0o700, exist_ok=True)
    # aqlguard stops this program with SIGTERM when the question ends
    # before an answer came: exit through the finally below, which
    # removes the question's file.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    sweep(spool)
    req = json.load(sys.stdin)

    if req["kind"] == "challenge":
        name = req["challenge_id"]
        if not SAFE_NAME.match(name):
            return 1
        write_private(
            os.path.join(spool, name + ".code"),
            f"aqlguard stopped {req['agent']}: {req.get('reason', '')}\n"
            f"expires: {req['expires_at']}\n"
            f"give this code to the assistant in your chat: {req['code']}\n",
        )
        return 0

    name = req["token"]
    if req["kind"] != "confirmation" or not SAFE_NAME.match(name):
        return 1
    question = os.path.join(spool, name + ".question")
    answer = os.path.join(spool, name + ".answer")
    write_private(question, describe(req))
    try:
        deadline = expiry(req)
        while datetime.datetime.now(datetime.timezone.utc) < deadline:
            try:
                with open(answer, encoding="utf-8") as f:
                    said = f.readline().strip().lower()
            except FileNotFoundError:
                time.sleep(0.2)
                continue
            os.remove(answer)
            if said in req["answers"]:
                print(said, flush=True)
            return 0
        return 0
    finally:
        try:
            os.remove(question)
        except FileNotFoundError:
            pass


if __name__ == "__main__":
    sys.exit(main())
