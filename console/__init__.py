"""The broker's web console (``console.ui``) and Kafka REST v3 (``console.rest_v3``)."""
