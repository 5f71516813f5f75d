"""Define, alter and delete pages: a form of the operation's fields; on POST the REST
operation runs as the signed-in user (its validation, its permission check, its one
service); a refusal shows in the form, with the status REST would have answered."""

from __future__ import annotations

from django.contrib import messages
from django.shortcuts import redirect, render

from baton_client.errors import BatonError, NotFound, PermissionDenied

from .editing import KINDS, altered, defined, errors_shown, shown
from .views import page


def _path(kwargs: dict) -> dict:
    return {k: v for k, v in kwargs.items() if k != "kind"}


def _definable(key: str, path: dict):
    """The kind a define page names, if it is defined where the page is (brokers and
    channels at the top, the others on a broker)."""
    kind = KINDS.get(key)
    if kind is None or kind.define is None or tuple(path) != kind.define.path:
        raise NotFound(f"Nothing called {key!r} is defined here.")
    return kind


def _refused(form, exc: BatonError) -> int:
    if isinstance(exc, PermissionDenied):
        raise exc
    errors_shown(form, exc)
    return exc.status or 400


def _render(request, kind, what: str, path: dict, form, status: int = 200, **extra):
    return render(
        request,
        "dashboard/definition_form.html",
        {
            "kind": kind,
            "what": what,
            "path": path,
            "form": form,
            "object_name": kind.name(path) if what != "define" else "",
            "back": kind.parent(path) if what == "define" else kind.page(path),
            "nav": "overview",
            **extra,
        },
        status=status,
    )


@page
def definition_define(request, kind, **kwargs):
    path = _path(kwargs)
    kind = _definable(kind, path)
    kind.may_define(request.user, **path)
    Form = kind.define_form()
    if request.method != "POST":
        return _render(request, kind, "define", path, Form())
    form, status = Form(request.POST), 400
    if form.is_valid():
        try:
            _, body = kind.define.run(request.user, {**path, **defined(form)})
        except BatonError as exc:
            status = _refused(form, exc)
        else:
            messages.success(request, f"Defined {kind.label} {body['name']}.")
            return redirect(kind.page(kind.defined_path(path, body)))
    return _render(request, kind, "define", path, form, status)


@page
def definition_alter(request, kind, **kwargs):
    kind, path = KINDS[kind], _path(kwargs)
    kind.may_change(request.user, **path)
    _, current = kind.display.run(request.user, path)
    Form = kind.alter_form()
    initial = {name: shown(current.get(name)) for name in Form.base_fields}
    if request.method != "POST":
        return _render(request, kind, "alter", path, Form(initial=initial))
    form, status = Form(request.POST, initial=initial), 400
    if form.is_valid():
        changes = altered(form)
        if not changes:
            messages.info(request, f"Nothing to change on {kind.label} {kind.name(path)}.")
            return redirect(kind.page(path))
        try:
            kind.alter.run(request.user, {**path, **changes})
        except BatonError as exc:
            status = _refused(form, exc)
        else:
            messages.success(request, f"Altered {kind.label} {kind.name(path)}: {', '.join(sorted(changes))}.")
            return redirect(kind.page(path))
    return _render(request, kind, "alter", path, form, status)


@page
def definition_delete(request, kind, **kwargs):
    kind, path = KINDS[kind], _path(kwargs)
    kind.may_change(request.user, **path)
    _, current = kind.display.run(request.user, path)
    purgeable = "purge" in kind.delete.Input.model_fields
    error, status = None, 200
    if request.method == "POST":
        data = {**path, **({"purge": request.POST.get("purge") == "yes"} if purgeable else {})}
        try:
            kind.delete.run(request.user, data)
        except BatonError as exc:
            if isinstance(exc, PermissionDenied):
                raise
            error, status = exc, exc.status or 400
        else:
            messages.success(request, f"Deleted {kind.label} {kind.name(path)}.")
            return redirect(kind.parent(path))
    return render(
        request,
        "dashboard/definition_delete.html",
        {
            "kind": kind,
            "path": path,
            "object_name": kind.name(path),
            "current": current,
            "purgeable": purgeable,
            "error": error,
            "back": kind.page(path),
            "nav": "overview",
        },
        status=status,
    )
