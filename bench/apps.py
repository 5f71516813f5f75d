from django.apps import AppConfig


class BenchConfig(AppConfig):
    """Benchmarks and the soak test: management commands only, no models. The product apps
    import nothing from here; this app imports the product's services to measure them."""

    name = "bench"
    verbose_name = "Benchmarks and soak"
