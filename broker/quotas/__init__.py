"""Client quotas, as Kafka's quota managers keep them.

- ``rate``: Kafka's windowed ``Rate`` (``quota.window.num`` samples of
  ``quota.window.size.seconds``) and the throttle-time formula, pure arithmetic.
- ``entities``: quota entities (user, client-id, their ``<default>`` forms, ip), the checks
  and messages of Kafka's ``ClientQuotaControlManager``, the DescribeClientQuotas filter, and
  the precedence between entity forms. Pure.
- ``store``: the durable set of quotas (``.hourglass/client-quotas.json``).
- ``manager``: per-client sensors and throttle decisions for produce, fetch and request time.
"""
