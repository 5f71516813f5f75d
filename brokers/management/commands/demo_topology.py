from django.core.management.base import BaseCommand

from brokers.services.demo import demo_topology_define


class Command(BaseCommand):
    help = "Define the demo topology (two brokers with a few queues); leaves what exists alone."

    def handle(self, *args, **options):
        made = demo_topology_define()
        self.stdout.write(f"demo topology: {len(made)} objects defined" + (f" ({', '.join(made)})" if made else ""))
