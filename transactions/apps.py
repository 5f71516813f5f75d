from django.apps import AppConfig


class TransactionsConfig(AppConfig):
    name = "transactions"
    verbose_name = "Transactions"
