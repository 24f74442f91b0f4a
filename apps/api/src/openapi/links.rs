//! OpenAPI `links` from the operations that create records to those that use their ids.

/// OpenAPI `links` from each creating operation (a `POST` answering 201 with the new record's
/// `id`) to the operations that take that id in their path, so a client or a stateful fuzzer
/// can chain them: `POST /v1/particles` → `getParticle`, `updateParticle`, … with
/// `particle_id = $response.body#/id`. Path parameters the creating operation shares are
/// passed on from its own request.
pub fn apply_links(document: &mut utoipa::openapi::OpenApi) {
    use utoipa::openapi::{RefOr, link::LinkBuilder};

    let operations: Vec<(String, String)> = document
        .paths
        .paths
        .iter()
        .flat_map(|(path, item)| {
            [
                item.get.as_ref(),
                item.put.as_ref(),
                item.post.as_ref(),
                item.delete.as_ref(),
                item.patch.as_ref(),
            ]
            .into_iter()
            .flatten()
            .filter_map(|operation| operation.operation_id.clone())
            .map(move |id| (path.clone(), id))
        })
        .collect();
    for (path, item) in document.paths.paths.iter_mut() {
        let Some(created) = item
            .post
            .as_mut()
            .and_then(|post| post.responses.responses.get_mut("201"))
        else {
            continue;
        };
        let RefOr::T(created) = created else { continue };
        let own: Vec<&str> = path_parameters(path).collect();
        for (target_path, operation_id) in &operations {
            let Some(rest) = target_path.strip_prefix(path.as_str()) else {
                continue;
            };
            // The new id is the first segment after the creating path: `/{id}` or `/{id}/…`.
            let Some(new_id) = rest
                .strip_prefix("/{")
                .and_then(|rest| rest.split_once('}'))
                .map(|(name, _)| name)
            else {
                continue;
            };
            let mut link = LinkBuilder::new()
                .operation_id(operation_id.clone())
                .parameter(new_id, "$response.body#/id");
            let deeper: Vec<&str> = path_parameters(target_path)
                .filter(|name| *name != new_id)
                .collect();
            if !deeper.iter().all(|name| own.contains(name)) {
                continue;
            }
            for name in deeper {
                link = link.parameter(name, format!("$request.path.{name}"));
            }
            created
                .links
                .insert(operation_id.clone(), link.build().into());
        }
    }
}

/// The names of a path template's parameters, in order.
fn path_parameters(path: &str) -> impl Iterator<Item = &str> {
    path.split('/')
        .filter_map(|segment| segment.strip_prefix('{')?.strip_suffix('}'))
}

/// utoipa 5 writes a link's fields in snake case (`operation_id`); OpenAPI spells them in
/// camel case (`operationId`), and clients ignore the others.
pub fn spell_links_in_camel_case(document: &mut serde_json::Value) {
    let Some(paths) = document
        .get_mut("paths")
        .and_then(serde_json::Value::as_object_mut)
    else {
        return;
    };
    let responses = paths
        .values_mut()
        .filter_map(serde_json::Value::as_object_mut)
        .flat_map(|item| item.values_mut())
        .filter_map(|operation| operation.get_mut("responses"))
        .filter_map(serde_json::Value::as_object_mut)
        .flat_map(|responses| responses.values_mut());
    for response in responses {
        let Some(links) = response
            .get_mut("links")
            .and_then(serde_json::Value::as_object_mut)
        else {
            continue;
        };
        for link in links
            .values_mut()
            .filter_map(serde_json::Value::as_object_mut)
        {
            for (snake, camel) in [
                ("operation_id", "operationId"),
                ("operation_ref", "operationRef"),
                ("request_body", "requestBody"),
            ] {
                if let Some(value) = link.remove(snake) {
                    link.insert(camel.to_owned(), value);
                }
            }
        }
    }
}
