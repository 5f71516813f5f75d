from django.contrib.auth.decorators import login_required
from django.shortcuts import render

from .selectors import overview


@login_required
def overview_page(request):
    return render(request, "dashboard/overview.html", {"overview": overview()})
