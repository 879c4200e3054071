# Import by the host's managed object id. The settings found at import are the
# ones destroy puts back.
terraform import 'vspherehpc_host_graphics.esx["esx01.example.com"]' host-12
