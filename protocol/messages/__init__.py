"""One module per API; each declares ``API = api(...)`` and exports ``<Name>Request`` and
``<Name>Response`` classes. ``protocol.api_keys`` discovers them all."""
