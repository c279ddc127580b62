"""Confluent's Kafka REST v3 API (and Hourglass's additions) under ``/v3``: see ``routes``."""
from console.rest_v3.routes import create_v3_app, routes

__all__ = ["create_v3_app", "routes"]
