from django.core.management.base import BaseCommand

from dashboard.users import admin_bootstrap


class Command(BaseCommand):
    help = (
        "When no superuser has a password yet, give the user 'admin' (a superuser) a generated "
        "password and print it, once. Otherwise print nothing."
    )

    def add_arguments(self, parser):
        parser.add_argument("--username", default="admin")
        parser.add_argument("--url", default="http://localhost:8000/login/")

    def handle(self, *args, username, url, **options):
        password = admin_bootstrap(username=username)
        if password:
            self.stdout.write(
                f"Created the dashboard administrator. Sign in at {url}\n"
                f"  user: {username}\n  password: {password}\n"
                f"(shown once; change it with: .venv/bin/python manage.py changepassword {username})"
            )
