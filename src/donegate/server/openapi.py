"""The API's OpenAPI 3.1 document, served at ``/api/openapi.json``: every route under ``/api``,
its body, its answers and the one error shape (``{"error": ..., "field": ...}``)."""

from __future__ import annotations

from typing import Any

from donegate.records.status import ESCALATION_VALUES, TASK_VALUES

__all__ = ["OPENAPI", "QUEUE_STATUSES", "STATUSES"]

STATUSES = tuple(str(v) for v in TASK_VALUES)
"""A task's statuses, as ``GET /api/tasks?status=`` takes them."""
QUEUE_STATUSES = (*(str(v) for v in ESCALATION_VALUES), "all")
"""The queue's statuses, as ``GET /api/escalations?status=`` takes them."""

_ERROR = {
    "type": "object",
    "required": ["error", "field"],
    "properties": {"error": {"type": "string"}, "field": {"type": ["string", "null"]}},
}
_ERRORS = {
    str(code): {
        "description": text,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
    }
    for code, text in (
        (400, "a bad parameter or body"),
        (401, "no token (a server with tokens)"),
        (
            403,
            "a write without the bearer token, from another site, or a review action by "
            "one who is not a reviewer",
        ),
        (404, "no such task or escalation"),
        (409, "the id was submitted with another spec, or the entry is closed"),
        (415, "the body is not application/json"),
        (422, "the spec is invalid; field names where"),
    )
}


def _json(ref: str) -> dict[str, Any]:
    return {"content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{ref}"}}}}


OPENAPI: dict[str, Any] = {
    "openapi": "3.1.0",
    "info": {
        "title": "donegate",
        "version": "1",
        "description": "Tasks in from a dispatcher, outcomes out. Auth: 'Authorization: Bearer "
        "SECRET' when the server has tokens; writes need it (or, on a tokenless loopback "
        "server, an application/json body).",
    },
    "components": {
        "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        "schemas": {
            "Error": _ERROR,
            "TaskSpec": {
                "type": "object",
                "description": "A donegate task spec (as a task file holds it); workdir must "
                "be absolute. notify: [{webhook: {url, headers}} | {command: [argv]}].",
                "required": ["id", "prompt", "workdir"],
                "properties": {
                    "id": {"type": "string", "pattern": "^[A-Za-z0-9._-]{1,128}$"},
                    "prompt": {"type": "string"},
                    "workdir": {"type": "string"},
                    "model": {"type": "string"},
                    "checks": {"type": "array"},
                    "notify": {"type": "array"},
                },
            },
            "Notification": {
                "type": "object",
                "properties": {
                    "id": {"type": "integer"},
                    "key": {"type": "string"},
                    "kind": {"enum": ["webhook", "command"]},
                    "target": {"type": "string"},
                    "state": {"enum": ["pending", "delivered", "failed"]},
                    "attempts": {"type": "integer"},
                    "max_attempts": {"type": "integer"},
                    "last_error": {"type": ["string", "null"]},
                    "delivered_at": {"type": ["number", "null"]},
                },
            },
            "Task": {
                "type": "object",
                "properties": {
                    "id": {"type": "string"},
                    "status": {"enum": list(STATUSES)},
                    "reason": {"type": ["string", "null"]},
                    "generation": {"type": "integer"},
                    "result": {"type": ["object", "null"]},
                    "certificate": {"type": ["object", "null"]},
                    "report": {"type": ["object", "null"]},
                    "notifications": {
                        "type": "array",
                        "items": {"$ref": "#/components/schemas/Notification"},
                    },
                    "created": {"type": "boolean", "description": "POST only"},
                },
            },
        },
    },
    "security": [{"bearer": []}, {}],
    "paths": {
        "/api/tasks": {
            "post": {
                "summary": "Queue a task (idempotent on id)",
                "parameters": [
                    {"name": "max_attempts", "in": "query", "schema": {"type": "integer"}}
                ],
                "requestBody": {"required": True, **_json("TaskSpec")},
                "responses": {
                    "201": {"description": "queued", **_json("Task")},
                    "200": {"description": "already queued with this spec", **_json("Task")},
                    **_ERRORS,
                },
            },
            "get": {
                "summary": "Tasks, newest first",
                "parameters": [
                    {"name": "status", "in": "query", "schema": {"enum": list(STATUSES)}},
                    {"name": "limit", "in": "query", "schema": {"type": "integer"}},
                ],
                "responses": {"200": {"description": "{tasks: [...]}"}, **_ERRORS},
            },
        },
        "/api/tasks/{id}": {
            "get": {
                "summary": "One task: status, result, certificate, report, notifications",
                "parameters": [
                    {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}
                ],
                "responses": {"200": {"description": "the task", **_json("Task")}, **_ERRORS},
            }
        },
        "/api/escalations": {
            "get": {
                "summary": "The human queue, oldest first",
                "parameters": [
                    {"name": "status", "in": "query", "schema": {"enum": list(QUEUE_STATUSES)}},
                    {"name": "after", "in": "query", "schema": {"type": "integer"}},
                    {"name": "limit", "in": "query", "schema": {"type": "integer"}},
                ],
                "responses": {"200": {"description": "{escalations: [...]}"}, **_ERRORS},
            }
        },
        "/api/escalations/{id}/resolve": {
            "post": {
                "summary": "Resolve an entry, or requeue its task with instructions",
                "parameters": [
                    {"name": "id", "in": "path", "required": True, "schema": {"type": "integer"}}
                ],
                "requestBody": {
                    "content": {
                        "application/json": {
                            "schema": {
                                "type": "object",
                                "properties": {
                                    "note": {"type": "string"},
                                    "requeue": {"type": "boolean"},
                                    "budget_extra": {
                                        "type": "object",
                                        "properties": {
                                            "usd": {"type": "number"},
                                            "tokens": {"type": "number"},
                                        },
                                    },
                                    "instructions": {"type": "string"},
                                },
                            }
                        }
                    }
                },
                "responses": {"200": {"description": "the entry"}, **_ERRORS},
            }
        },
        "/api/escalations/{id}/approve": {
            "post": {
                "summary": "Approve a review: its task is done, with a certificate naming you",
                "parameters": [
                    {"name": "id", "in": "path", "required": True, "schema": {"type": "integer"}}
                ],
                "requestBody": {
                    "content": {
                        "application/json": {
                            "schema": {"type": "object", "properties": {"note": {"type": "string"}}}
                        }
                    }
                },
                "responses": {
                    "200": {"description": "the entry, with the new certificate's path"},
                    **_ERRORS,
                },
            }
        },
    },
}
