"""A conformance run's results: a table for people, JSON for tools, JUnit for CI."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from dataclasses import asdict, dataclass
from typing import Final, Literal, TextIO

from gangway_cli.timeline import table

Status = Literal["pass", "fail", "skip", "error"]
FORMATS: Final = ("table", "json", "junit")


@dataclass(frozen=True)
class Result:
    scenario: str
    status: Status
    evidence: str
    seconds: float


def show(backend: str, results: list[Result], output: str, out: TextIO) -> None:
    if output == "json":
        json.dump({"backend": backend, "results": [asdict(r) for r in results]}, out, indent=2)
        out.write("\n")
    elif output == "junit":
        out.write(junit(backend, results))
    else:
        rows = [(r.scenario, r.status, r.evidence) for r in results]
        out.write("\n".join(table(("scenario", "result", "evidence"), rows)) + "\n")


def junit(backend: str, results: list[Result]) -> str:
    """One test suite for the backend, a test case per scenario; a failure's evidence is
    its message, an error's (the scenario could not run) and a skip's (the backend declares
    it cannot) too."""
    suite = ET.Element(
        "testsuite",
        name=f"gangway-conformance.{backend}",
        tests=str(len(results)),
        failures=str(sum(r.status == "fail" for r in results)),
        errors=str(sum(r.status == "error" for r in results)),
        skipped=str(sum(r.status == "skip" for r in results)),
        time=f"{sum(r.seconds for r in results):.1f}",
    )
    for result in results:
        case = ET.SubElement(
            suite,
            "testcase",
            classname=f"gangway.conformance.{backend}",
            name=result.scenario,
            time=f"{result.seconds:.1f}",
        )
        if result.status == "pass":
            ET.SubElement(case, "system-out").text = result.evidence
        elif result.status == "skip":
            ET.SubElement(case, "skipped", message=result.evidence[:200]).text = result.evidence
        else:
            tag = "failure" if result.status == "fail" else "error"
            ET.SubElement(case, tag, message=result.evidence[:200]).text = result.evidence
    ET.indent(suite)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suite, "unicode") + "\n"
