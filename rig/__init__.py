"""feltlab's hardware-in-the-loop rig: CAN transport, protocol (DBC + ISO-TP), simulated
devices, capture and certification.  A plugin of the SDK: the SDK never imports it."""
