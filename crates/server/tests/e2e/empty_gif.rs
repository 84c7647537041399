//! `empty_gif`: the 1x1 GIF for GET and HEAD, 405 for other methods.

use crate::support::Instance;

#[test]
fn get_and_head_have_the_gif_other_methods_405() {
    let server = Instance::http(
        "server { listen 127.0.0.1:8080; location / { empty_gif; } location /x { } }",
    );
    let response = server.get("/pixel");
    assert_eq!(response.status, 200);
    assert_eq!(response.header("Content-Type"), Some("image/gif"));
    assert_eq!(response.content_length(), Some(43));
    assert_eq!(&response.body[..6], b"GIF89a");
    assert_eq!(
        response.header("Last-Modified"),
        Some("Mon, 28 Sep 1970 06:00:00 GMT")
    );
    let mut client = server.connect();
    client.write("HEAD / HTTP/1.0\r\n\r\n");
    let head = client.read_head_response();
    assert_eq!(head.status, 200);
    assert_eq!(head.content_length(), Some(43));
    assert!(head.body.is_empty());
    let put = server.request("PUT / HTTP/1.0\r\nContent-Length: 0\r\n\r\n");
    assert_eq!(put.status, 405);
}
