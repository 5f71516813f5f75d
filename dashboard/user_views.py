"""Users and grants in the console (superusers only, as ``manage.py dashboard_user``,
``grant`` and ``revoke``): each form checked by a Django form for its shape, then one
service (``dashboard.users``, ``brokers.services.access``) for the rules; a refusal shows
in the form."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.shortcuts import redirect, render

from brokers.models import Grant
from brokers.services.access import grant_actions, revoke_actions
from baton_client.errors import BatonError

from .access import ROLES, require_superuser
from .editing import errors_shown
from .users import dashboard_user, user_delete
from .views import page

ACTIONS = [(a, a) for a in Grant.ACTIONS]


class UserForm(forms.Form):
    username = forms.CharField(max_length=150, help_text="Created if new; an existing user gets the new password.")
    password = forms.CharField(widget=forms.PasswordInput, help_text="At least 8 characters.")
    role = forms.ChoiceField(
        choices=[("", "—")] + [(r, r) for r in ROLES], required=False, help_text="Granted on the broker below."
    )
    broker = forms.CharField(max_length=48, required=False)


class GrantForm(forms.Form):
    username = forms.CharField(max_length=150)
    broker = forms.CharField(max_length=48)
    queue = forms.CharField(max_length=48, required=False, help_text="Blank: the whole broker.")
    actions = forms.MultipleChoiceField(choices=ACTIONS, widget=forms.CheckboxSelectMultiple)


FORMS = {"user": UserForm, "grant": GrantForm, "revoke": GrantForm}


def _apply(which: str, data: dict, user) -> str:
    if which == "user":
        dashboard_user(
            username=data["username"],
            password=data["password"],
            role=data["role"] or None,
            brokers=[data["broker"]] if data["broker"] else [],
        )
        return f"Saved user {data['username']}."
    service = grant_actions if which == "grant" else revoke_actions
    service(username=data["username"], broker=data["broker"], queue=data["queue"], actions=data["actions"])
    verb = "Granted" if which == "grant" else "Revoked"
    return f"{verb} {', '.join(data['actions'])} on {data['broker']}{'/' + data['queue'] if data['queue'] else ''}."


@page
def users_page(request):
    require_superuser(request.user)
    bound, status = {}, 200
    if request.method == "POST":
        which = request.POST.get("form", "")
        if which == "delete":
            try:
                user_delete(username=request.POST.get("username", ""), by=request.user.username)
                messages.success(request, f"Deleted user {request.POST.get('username')}.")
            except BatonError as exc:
                messages.error(request, exc.message)
            return redirect("dashboard-users")
        if which in FORMS:
            form = FORMS[which](request.POST, prefix=which)
            if form.is_valid():
                try:
                    messages.success(request, _apply(which, form.cleaned_data, request.user))
                    return redirect("dashboard-users")
                except BatonError as exc:
                    errors_shown(form, exc)
                    status = exc.status or 400
            else:
                status = 400
            bound[which] = form
    User = get_user_model()
    grants: dict[int, list] = {}
    for grant in Grant.objects.order_by("broker", "queue"):
        grants.setdefault(grant.user_id, []).append(grant)
    users = [(u, grants.get(u.pk, [])) for u in User.objects.order_by("username")]
    return render(
        request,
        "dashboard/users.html",
        {
            "users": users,
            "user_form": bound.get("user") or UserForm(prefix="user"),
            "grant_form": bound.get("grant") or GrantForm(prefix="grant"),
            "revoke_form": bound.get("revoke") or GrantForm(prefix="revoke"),
            "nav": "users",
        },
        status=status,
    )
