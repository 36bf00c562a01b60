"""The HTML report: figure data, SVG figures and the page."""
