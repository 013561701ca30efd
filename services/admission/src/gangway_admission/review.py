"""AdmissionReview v1 on the wire: the request the apiserver sends, the response it reads.

Only what admission needs is decoded; the object stays raw until it is read as a
PodCliqueSet, so a malformed object becomes a rejection naming its field, never a crash.
"""

from __future__ import annotations

import re
import sys
from typing import Any, Final, Literal

import msgspec

from gangway_admission.verdict import Verdict
from gangway_contracts.codec import to_json
from gangway_contracts.errors import FieldError, validation_error
from gangway_contracts.grove import PodCliqueSet
from gangway_contracts.k8s import Wire

API_VERSION: Final = "admission.k8s.io/v1"
NULL: Final = msgspec.Raw(b"null")
# Operations the webhook is registered for; anything else is admitted untouched.
Operation = Literal["CREATE", "UPDATE"]


class GroupVersionKind(Wire, frozen=True, kw_only=True):
    group: str = ""
    version: str = ""
    kind: str = ""


class AdmissionRequest(Wire, frozen=True, kw_only=True):
    uid: str
    operation: str
    kind: GroupVersionKind = GroupVersionKind()
    namespace: str = ""
    name: str = ""
    # Raw cannot sit in a union with None; a missing or null object reads as JSON null.
    object: msgspec.Raw = NULL
    old_object: msgspec.Raw = NULL
    dry_run: bool = False


class AdmissionReview(Wire, frozen=True, kw_only=True):
    api_version: str
    kind: str
    request: AdmissionRequest


class Malformed(Exception):
    """The body is not an AdmissionReview: answered with HTTP 400, there is no uid to reply to."""


class TooDeep(Exception):
    """An AdmissionReview nested deeper than can be read: rejected, answering its uid."""

    def __init__(self, uid: str) -> None:
        self.uid = uid
        super().__init__(f"nested more than {sys.getrecursionlimit()} levels deep")


# The apiserver writes request.uid first; a review too deep to decode is still answered.
_FIRST_UID: Final = re.compile(rb'"uid"\s*:\s*"([^"\\]{1,128})"')


def read_review(body: bytes) -> AdmissionReview:
    try:
        review = msgspec.json.decode(body, type=AdmissionReview)
    except RecursionError:
        found = _FIRST_UID.search(body, 0, 4096)
        if found is None:
            raise Malformed("not an AdmissionReview: nested too deeply to read") from None
        raise TooDeep(found.group(1).decode(errors="replace")) from None
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise Malformed(f"not an AdmissionReview: {exc}") from None
    if review.api_version != API_VERSION or review.kind != "AdmissionReview":
        raise Malformed(
            f"expected {API_VERSION} AdmissionReview, got {review.api_version} {review.kind}"
        )
    return review


def read_podcliqueset(raw: msgspec.Raw, where: str) -> PodCliqueSet | FieldError:
    """The object as a PodCliqueSet, or the error naming the field that is wrong."""
    if bytes(raw) == b"null":
        return FieldError(field=where, reason="missing from the AdmissionReview")
    try:
        return msgspec.json.decode(raw, type=PodCliqueSet)
    except msgspec.ValidationError as exc:
        error = validation_error(exc)
        return error if error.field else FieldError(field=where, reason=error.reason)
    except (msgspec.DecodeError, RecursionError) as exc:
        return FieldError(field=where, reason=f"cannot be read: {exc}")


def response(uid: str, verdict: Verdict, request: AdmissionRequest | None = None) -> bytes:
    """The AdmissionReview answer; a rejection carries every field error as a cause, and
    what it is about (``request``), so kubectl says `The PodCliqueSet "NAME" is invalid:`
    before the causes, as for the API server's own validation."""
    answer: dict[str, Any] = {"uid": uid, "allowed": verdict.allowed}
    if verdict.warnings:
        # The apiserver truncates a warning past 256 characters and all of them past 4 KiB.
        answer["warnings"] = [w[:256] for w in verdict.warnings[:16]]
    if not verdict.allowed:
        answer["status"] = {
            "code": 422,
            "reason": "Invalid",
            "message": verdict.message,
            "details": {
                **_about(request),
                "causes": [
                    {"field": e.field, "message": e.reason, "reason": "FieldValueInvalid"}
                    for e in verdict.errors
                ],
            },
        }
    return to_json({"apiVersion": API_VERSION, "kind": "AdmissionReview", "response": answer})


def _about(request: AdmissionRequest | None) -> dict[str, str]:
    if request is None or not request.kind.kind:
        return {}
    return {"group": request.kind.group, "kind": request.kind.kind, "name": request.name}
