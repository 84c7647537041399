//! An HTTP/2 client for the tests (h2c with prior knowledge, the `h2` crate): requests sent
//! together or in turn on one connection, and their answers with trailers.

use std::time::Duration;

use bytes::Bytes;
use http_types::{Method, Request};

/// A response as the test sees it.
pub struct Answer {
    pub status: u16,
    pub headers: http_types::HeaderMap,
    pub body: Vec<u8>,
    pub trailers: Option<http_types::HeaderMap>,
}

pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a test runtime starts")
}

/// Sends `requests` at once on one h2c connection and returns their answers in order.
pub fn exchange(port: u16, requests: Vec<(Request<()>, Option<Bytes>)>) -> Vec<Answer> {
    exchange_with(port, requests, false)
}

/// As [`exchange`], each request sent once the one before is answered.
pub fn exchange_in_turn(port: u16, requests: Vec<(Request<()>, Option<Bytes>)>) -> Vec<Answer> {
    exchange_with(port, requests, true)
}

fn exchange_with(
    port: u16,
    requests: Vec<(Request<()>, Option<Bytes>)>,
    in_turn: bool,
) -> Vec<Answer> {
    runtime().block_on(async move {
        let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .expect("the server listens");
        let (client, connection) = h2::client::handshake(tcp).await.expect("h2 handshake");
        let driver = tokio::spawn(async move {
            let _ = connection.await;
        });
        let mut pending = Vec::new();
        let mut answers = Vec::new();
        for (request, body) in requests {
            let mut client = client
                .clone()
                .ready()
                .await
                .expect("the connection is ready");
            let (response, mut send) = client
                .send_request(request, body.is_none())
                .expect("the request goes out");
            if let Some(body) = body {
                send.send_data(body, true).expect("the body goes out");
            }
            pending.push(response);
            if in_turn {
                answers.extend(receive(std::mem::take(&mut pending)).await);
            }
        }
        answers.extend(receive(pending).await);
        drop(client);
        driver.abort();
        answers
    })
}

/// The answers to `pending` responses, in order.
async fn receive(pending: Vec<h2::client::ResponseFuture>) -> Vec<Answer> {
    let mut answers = Vec::new();
    for response in pending {
        let response = tokio::time::timeout(Duration::from_secs(20), response)
            .await
            .expect("the response comes in time")
            .expect("a response");
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let mut stream = response.into_body();
        let mut body = Vec::new();
        while let Some(chunk) = stream.data().await {
            let chunk = chunk.expect("body data");
            let _ = stream.flow_control().release_capacity(chunk.len());
            body.extend_from_slice(&chunk);
        }
        let trailers = stream.trailers().await.expect("trailers or none");
        answers.push(Answer {
            status,
            headers,
            body,
            trailers,
        });
    }
    answers
}

pub fn get(path: &str) -> (Request<()>, Option<Bytes>) {
    let request = Request::builder()
        .uri(format!("http://localhost{path}"))
        .body(())
        .expect("a valid request");
    (request, None)
}

pub fn with_method(
    method: Method,
    path: &str,
    body: Option<&'static [u8]>,
) -> (Request<()>, Option<Bytes>) {
    let mut builder = Request::builder()
        .method(method)
        .uri(format!("http://localhost{path}"));
    // A body is sent with its length: `$content_length` shows it.
    if let Some(body) = body {
        builder = builder.header("content-length", body.len());
    }
    let request = builder.body(()).expect("a valid request");
    (request, body.map(Bytes::from_static))
}
