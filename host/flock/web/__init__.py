"""The flock's web page: routes.py serves it (its files here, the npm libraries, the Rive file,
/api/ui); the HTML, CSS and ES modules beside it are the page itself, with no build step."""
