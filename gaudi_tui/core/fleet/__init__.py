"""The fleet: many Gaudi hosts seen through Prometheus and Intel's exporter metric names.

`metrics` holds the exporter's names, HELP texts and labels; `exporter` serves them from this host's
device sources; `exposition` reads a saved /metrics text; `prometheus` asks a Prometheus server;
`fetch` runs one refresh (one query per metric) or reads a saved text; `model` turns `samples`
into hosts, cards and health flags. No Textual here.
"""
