"use strict";
if (new URLSearchParams(window.location.search).has("refused")) {
  document.getElementById("refused").hidden = false;
}
