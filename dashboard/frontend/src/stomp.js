// @stomp/stompjs as a classic script: window.BatonStomp.Client, for pages that speak STOMP to
// Baton at /stomp/ (docs/stomp.md); the browser test drives it in Chromium.
import { Client } from "@stomp/stompjs";

window.BatonStomp = { Client };
