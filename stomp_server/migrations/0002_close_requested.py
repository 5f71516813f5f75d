from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("stomp_server", "0001_initial")]

    operations = [
        migrations.AddField(
            model_name="stompclient",
            name="close_requested_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="stompclient",
            name="close_requested_by",
            field=models.CharField(blank=True, max_length=150),
        ),
    ]
